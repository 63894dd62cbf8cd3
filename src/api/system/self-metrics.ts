import { STATUS_CODES } from 'node:http';
import { availableParallelism } from 'node:os';
import type { TemplatedApp } from 'uws-pack';
import { GLOBAL } from '../../accounts/repo.js';
import { authenticate } from '../../auth/authenticate.js';
import { hasScope } from '../../auth/scopes.js';
import { ApiError, invalidField, toApiError } from '../../errors.js';
import { registry } from '../../self-metrics/registry.js';
import { bindServerGauges, sampleServerGauges } from '../../self-metrics/server-gauges.js';
import type { Services } from '../../services.js';
import { errorEnvelope } from '../http/envelope.js';
import { readHead, sendJson, type ResponseState } from '../http/uws-transport.js';

/** One sample as a record (`?format=json`): what a pull stores with `json_records_path: "samples"`. */
export interface JsonSample {
  name: string;
  type: string;
  labels: Record<string, string | number>;
  value: number;
}

export type MetricsAnswer = { status: 200; contentType: string; body: string } | { status: number; error: ApiError };

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

/**
 * `GET /metrics` (docs/self-metrics.md): the Prometheus text exposition, or JSON samples with
 * `?format=json`. Public when `SLUICE_METRICS_PUBLIC=1`; otherwise a key or session with
 * `servers:read` (401/403 in the usual envelope, so a misconfigured scraper sees why).
 */
export async function answerMetrics(
  services: Pick<Services, 'accounts' | 'config'>,
  headers: Record<string, string>,
  query = '',
): Promise<MetricsAnswer> {
  try {
    if (!services.config.metricsPublic) {
      const principal = authenticate(services.accounts, headers);
      if (!hasScope(principal.scopes, 'servers:read'))
        throw new ApiError(
          'forbidden',
          'GET /metrics needs the servers:read scope (or SLUICE_METRICS_PUBLIC=1 on the server)',
        );
    }
    const format = new URLSearchParams(query).get('format');
    if (format !== null && format !== 'json' && format !== 'prometheus')
      throw invalidField('query.format', 'must be prometheus (the default) or json');
    sampleServerGauges();
    if (format === 'json')
      return {
        status: 200,
        contentType: 'application/json; charset=utf-8',
        body: JSON.stringify({ samples: await jsonSamples() }),
      };
    return { status: 200, contentType: registry.contentType, body: await registry.metrics() };
  } catch (err) {
    const e = toApiError(err);
    return { status: e.status, error: e };
  }
}

/** The state gauges' readings of this server. */
function gaugeSources(services: Services) {
  const threads = services.config.workers > 0 ? services.config.workers : Math.max(1, availableParallelism());
  return {
    spoolRecords: () => services.spool.pendingRecords(),
    spoolProcessingRecords: () => services.spool.processingRecords(),
    spoolBytes: () => services.spool.storedBytes(),
    oldestSpooledAt: () => services.spool.oldestPendingAt(),
    now: () => services.clock.now(),
    workers: () => (services.pipeline ? { threads, busy: services.pipeline.running() } : null),
    rollupMergeBacklog: () => {
      const rollups = services.rollups as { pending?: { keys(): number[] } } | null;
      return rollups?.pending ? rollups.pending.keys().length : 0;
    },
    compactionBacklog: () => {
      let rows = 0;
      for (const team of services.accounts.teams.list(GLOBAL)) {
        for (const project of services.projects.list(team.id)) {
          for (const m of services.metrics.list(project.id))
            if (m.deleted_at === null) rows += Math.max(0, m.compact_total_count - m.compact_completed_count);
        }
      }
      return rows;
    },
  };
}

/**
 * Serve `GET /metrics` on the server's App (an exact route, ahead of the control plane's catch-all)
 * and bind the state gauges to this server. Returns the unbind function for `stop`.
 */
export function mountSelfMetrics(app: TemplatedApp, services: Services): () => void {
  app.get('/metrics', (res, req) => {
    const head = readHead(req);
    const state: ResponseState = { aborted: false, done: false };
    res.onAborted(() => (state.aborted = true));
    void answerMetrics(services, head.headers, head.query).then((answer) => {
      if ('error' in answer)
        return sendJson(res, state, answer.status, errorEnvelope('GET /metrics', answer.error), answer.error.headers);
      if (state.aborted || state.done) return;
      state.done = true;
      res.cork(() => {
        res.writeStatus(`200 ${STATUS_CODES[200]}`);
        res.writeHeader('content-type', answer.contentType);
        res.end(answer.body);
      });
    });
  });
  return bindServerGauges(gaugeSources(services));
}
