import type { Clock } from '../clock.js';
import { nextUpdatedAt } from '../catalog/timestamps.js';
import type { CommitParticipant } from '../commit/batch-commit.js';
import { metricsOutputs } from './metric-stage.js';
import type { MetricCatalog } from './metric-catalog.js';
import { feedsLive } from './metric-task.js';
import type { PendingPartials } from './pending-partials.js';
import type { MetricPartials } from './rollup-types.js';
import { foldPartials, SeriesBudget } from './series-limit.js';
import { stageSeenSeries } from './series-registry.js';

/** What the rollups staged for one batch. */
export interface RollupStaged {
  /** The pending entry's key, or null when the batch brought no partials. */
  key: number | null;
  /** Metrics set to `error` by their worker outcome. */
  failed: string[];
}

/**
 * Rollups on the commit seam (docs/architecture.md, "The commit"), after views: inside the spool's
 * transaction, each metric's partials of the batch become one pending LMDB entry (keyed by the
 * batch's first spool sequence), the series it saw are registered (new ones past a series limit
 * folded into `__other__`, series-limit.ts), and the metric's live start is marked; a metric whose
 * partials failed in the worker is set to `error`. Partials built for a revision the metric has
 * left, or for a metric gone or in error, are dropped. Once durable,
 * `merge(key)` carries the entry into DuckDB (rollups.ts).
 */
export function rollupCommitParticipant(d: {
  metrics: MetricCatalog;
  pending: PendingPartials;
  clock: Clock;
  merge: (key: number) => void;
}): CommitParticipant<RollupStaged | null> {
  return {
    name: 'rollups',
    stage({ lease, result }) {
      const outcomes = metricsOutputs(result).flatMap((p) => p.outcomes);
      if (outcomes.length === 0) return null;
      const store = d.metrics.store;
      const now = d.clock.now();
      const keep: MetricPartials[] = [];
      const failed: string[] = [];
      const budget = new SeriesBudget(store, d.metrics.seriesLimits);
      for (const o of outcomes) {
        const [id, revision] =
          o.status === 'ok' ? [o.partials.metricId, o.partials.revision] : [o.metricId, o.revision];
        const m = store.byId(id);
        if (!m || m.definition_revision !== revision || !feedsLive(m)) continue;
        if (o.status === 'failed') {
          const message = `building the rollups of the batch of spool entries ${lease.firstSeq}–${lease.lastSeq} failed: ${o.message}`;
          store.stageMetric({
            ...m,
            status: 'error',
            error_message: message,
            updated_at: nextUpdatedAt(d.clock, m.updated_at),
          });
          failed.push(id);
          continue;
        }
        d.pending.stageLiveFrom(id, revision, lease.firstSeq);
        // New series past a limit are counted under `__other__`: decided and staged in this transaction.
        const { folded } = stageSeenSeries(store, m, o.partials.series, now, budget);
        if (o.partials.partials.length > 0) keep.push(foldPartials(o.partials, folded));
      }
      if (keep.length === 0) return { key: null, failed };
      d.pending.stage(lease.firstSeq, { metrics: keep });
      return { key: lease.firstSeq, failed };
    },
    applyCommitted(_batch, staged) {
      if (!staged) return;
      if (staged.key !== null) d.merge(staged.key);
      if (staged.failed.length > 0) d.metrics.notify(staged.failed);
    },
    abandon({ lease }) {
      d.pending.forget(lease.firstSeq);
    },
  };
}
