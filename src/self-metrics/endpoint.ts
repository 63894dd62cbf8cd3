import { hasScope } from '../auth/scopes.js';
import { authenticate } from '../auth/authenticate.js';
import { ApiError, toApiError } from '../errors.js';
import type { Services } from '../services.js';
import { registry } from './registry.js';
import { sampleServerGauges } from './server-gauges.js';

export type MetricsAnswer = { status: 200; contentType: string; body: string } | { status: number; error: ApiError };

/**
 * `GET /metrics` (docs/self-metrics.md): the Prometheus text exposition. Public when
 * `SLUICE_METRICS_PUBLIC=1`; otherwise a key or session with `servers:read` (401/403 in the usual
 * envelope, so a misconfigured scraper sees why).
 */
export async function answerMetrics(services: Services, headers: Record<string, string>): Promise<MetricsAnswer> {
  try {
    if (!services.config.metricsPublic) {
      const principal = authenticate(services.accounts, headers);
      if (!hasScope(principal.scopes, 'servers:read')) throw new ApiError('forbidden', 'GET /metrics needs the servers:read scope (or SLUICE_METRICS_PUBLIC=1 on the server)');
    }
    sampleServerGauges();
    return { status: 200, contentType: registry.contentType, body: await registry.metrics() };
  } catch (err) {
    const e = toApiError(err);
    return { status: e.status, error: e };
  }
}
