import { hasScope } from '../auth/scopes.js';
import { authenticate } from '../auth/authenticate.js';
import { ApiError, invalidField, toApiError } from '../errors.js';
import type { Services } from '../services.js';
import { registry } from './registry.js';
import { sampleServerGauges } from './server-gauges.js';

/** One sample as a record (`?format=json`): what a pull stores with `json_records_path: "samples"`. */
export interface JsonSample {
  name: string;
  type: string;
  labels: Record<string, string | number>;
  value: number;
}

/** Every sample of the registry, histograms as their `_bucket`/`_sum`/`_count` series. */
async function jsonSamples(): Promise<JsonSample[]> {
  const out: JsonSample[] = [];
  for (const m of await registry.getMetricsAsJSON()) {
    for (const v of m.values as { value: number; labels: Record<string, string | number>; metricName?: string }[]) {
      out.push({ name: v.metricName ?? m.name, type: String(m.type), labels: v.labels, value: v.value });
    }
  }
  return out;
}

export type MetricsAnswer = { status: 200; contentType: string; body: string } | { status: number; error: ApiError };

/**
 * `GET /metrics` (docs/self-metrics.md): the Prometheus text exposition. Public when
 * `SLUICE_METRICS_PUBLIC=1`; otherwise a key or session with `servers:read` (401/403 in the usual
 * envelope, so a misconfigured scraper sees why).
 */
export async function answerMetrics(services: Services, headers: Record<string, string>, query = ''): Promise<MetricsAnswer> {
  try {
    if (!services.config.metricsPublic) {
      const principal = authenticate(services.accounts, headers);
      if (!hasScope(principal.scopes, 'servers:read')) throw new ApiError('forbidden', 'GET /metrics needs the servers:read scope (or SLUICE_METRICS_PUBLIC=1 on the server)');
    }
    const format = new URLSearchParams(query).get('format');
    if (format !== null && format !== 'json' && format !== 'prometheus') throw invalidField('query.format', 'must be prometheus (the default) or json');
    sampleServerGauges();
    if (format === 'json') return { status: 200, contentType: 'application/json; charset=utf-8', body: JSON.stringify({ samples: await jsonSamples() }) };
    return { status: 200, contentType: registry.contentType, body: await registry.metrics() };
  } catch (err) {
    const e = toApiError(err);
    return { status: e.status, error: e };
  }
}
