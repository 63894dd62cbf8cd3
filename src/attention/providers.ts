import type { MetricCatalog } from '../rollup/metric-catalog.js';
import type { ViewCatalog } from '../transform/view-catalog.js';
import {
  NODE_SUBJECT,
  type MinuteCounters,
  type PipelineErrorReason,
  type PipelineTelemetry,
} from '../telemetry/pipeline-telemetry.js';
import type { AttentionItem, AttentionProvider } from './types.js';

const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Refusals in the last this-many minutes are "now" (tier `losing_data`); earlier ones are `resolved`. */
export const REFUSING_NOW_MS = 5 * MIN;

/** Refusal reasons by group (`detail`): what the sender must fix. Capacity refusals are their own type. */
const INGEST_GROUPS: Record<string, readonly PipelineErrorReason[]> = {
  auth: ['auth_missing_credentials', 'auth_invalid_credentials', 'auth_unavailable'],
  request: ['payload_too_large', 'request_validation_failed', 'frame_invalid', 'empty_payload'],
  source_deleted: ['source_deleted'],
  server: ['server_error', 'connection_closed'],
};
const CAPACITY: readonly PipelineErrorReason[] = [
  'spool_full_disk_gate',
  'spool_full_storage_write',
  'spool_full_ingest_queue',
  'spool_full_wal_unavailable',
];

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * When refusals that stopped are shown to have ended: to the minute after the last refused minute
 * when that was within the last hour, else to the end of its hour (spec: Attention item `ended_at`).
 */
export function refusalEndedAt(lastMinute: number, now: number): string {
  const end = lastMinute + MIN;
  return iso(now - end <= HOUR ? end : Math.ceil(end / HOUR) * HOUR);
}

function refusalItem(
  type: 'ingest_refusals' | 'capacity_refusals',
  detail: string,
  minutes: Map<number, MinuteCounters>,
  reasons: readonly PipelineErrorReason[],
  now: number,
  countSpan: number,
): AttentionItem | null {
  let count = 0;
  let first: number | null = null;
  let last: number | null = null;
  for (const [minute, c] of [...minutes].sort(([a], [b]) => a - b)) {
    const n = reasons.reduce((sum, r) => sum + (c.error_counts[r] ?? 0), 0);
    if (n === 0) continue;
    if (minute >= now - countSpan) count += n;
    first ??= minute;
    last = minute;
  }
  if (last === null) return null;
  const refusingNow = now - last <= REFUSING_NOW_MS;
  return {
    type,
    tier: refusingNow ? 'losing_data' : 'resolved',
    resource_id: null,
    resource_name: null,
    count,
    since: iso(first!),
    ended_at: refusingNow ? null : refusalEndedAt(last, now),
    detail,
  };
}

/**
 * `ingest_refusals` (per reason group, requests refused over 24 hours) and `capacity_refusals`
 * (spool full, over the last hour), from the pipeline telemetry's per-minute counters: `losing_data`
 * while refusing (a refusal in the last 5 minutes), then `resolved` with `ended_at`, kept 24 hours.
 */
export function refusalAttention(telemetry: Pick<PipelineTelemetry, 'range'>): AttentionProvider {
  return {
    name: 'refusals',
    items(projectId: string, now: number): AttentionItem[] {
      if (projectId === NODE_SUBJECT) return [];
      const minutes = telemetry.range(projectId, now - DAY, now + MIN);
      const out: AttentionItem[] = [];
      for (const [group, reasons] of Object.entries(INGEST_GROUPS)) {
        const item = refusalItem('ingest_refusals', group, minutes, reasons, now, DAY);
        if (item) out.push(item);
      }
      const capacity = refusalItem('capacity_refusals', 'spool_full', minutes, CAPACITY, now, HOUR);
      if (capacity) out.push(capacity);
      return out;
    },
  };
}

/**
 * `metric_error` (a metric in `error`), `transform_error` (a view with failing transforms, `count`
 * of them), `join_error` (a join view whose joining stopped) and `shape_deferral` (a view with event
 * shapes waiting that no person excluded, `count` = events waiting): tier `stalled`, each naming the
 * resource to open. Deleted resources are not reported.
 */
export function pipelineAttention(deps: {
  metrics: Pick<MetricCatalog, 'list'>;
  views: Pick<ViewCatalog, 'list' | 'store'>;
}): AttentionProvider {
  return {
    name: 'pipeline',
    items(projectId: string): AttentionItem[] {
      const out: AttentionItem[] = [];
      for (const m of deps.metrics.list(projectId)) {
        if (m.deleted_at || m.status !== 'error') continue;
        out.push({
          type: 'metric_error',
          tier: 'stalled',
          resource_id: m.id,
          resource_name: m.name,
          count: null,
          since: m.updated_at,
          ended_at: null,
          detail: null,
        });
      }
      for (const v of deps.views.list(projectId)) {
        if (v.deleted_at) continue;
        const failing = deps.views.store.transformsOf(v.id).filter((t) => t.status === 'error');
        if (failing.length) {
          const since = failing.map((t) => t.updated_at).sort()[0]!;
          out.push({
            type: 'transform_error',
            tier: 'stalled',
            resource_id: v.id,
            resource_name: v.name,
            count: failing.length,
            since,
            ended_at: null,
            detail: null,
          });
        }
        if (v.join_status === 'error') {
          out.push({
            type: 'join_error',
            tier: 'stalled',
            resource_id: v.id,
            resource_name: v.name,
            count: null,
            since: v.updated_at,
            ended_at: null,
            detail: null,
          });
        }
        const waiting = deps.views.store
          .deferralsOf(v.id)
          .filter((d) => d.resolved_at === null && d.excluded_at === null && d.decision?.action !== 'exclude');
        if (waiting.length) {
          const since = waiting.map((d) => d.first_deferred_at).sort()[0]!;
          out.push({
            type: 'shape_deferral',
            tier: 'stalled',
            resource_id: v.id,
            resource_name: v.name,
            count: waiting.reduce((n, d) => n + d.event_count, 0),
            since,
            ended_at: null,
            detail: null,
          });
        }
      }
      return out;
    },
  };
}
