import type { Store } from '../store/db.js';
import { Index, Table } from '../store/table.js';
import { ScopedTable } from '../store/scoped-table.js';
import type { MetricRecord, MetricSeriesRecord } from './metric-records.js';
import { SeriesCache, type MetricSeriesView } from './series-cache.js';

/**
 * LMDB storage of metrics. Metrics are kept under their project (the table's id index finds the
 * project from the id alone); series under their metric. Writes (`stage*`) run inside `store.transaction`.
 */
export class MetricStore {
  readonly metrics: ScopedTable<MetricRecord>;
  readonly series: Table<MetricSeriesRecord>;
  /** `<metric id> NUL <series hash>` → series id: the rollups find a series by the hash of its values. */
  readonly seriesHash: Index;
  /** The registry in memory, kept current by the series writes of this store once they commit. */
  readonly seriesCache: SeriesCache;

  constructor(
    readonly store: Store,
    opts: { cachedSeries?: number } = {},
  ) {
    this.metrics = new ScopedTable(store, 'metrics', 'metric_project');
    this.series = new Table(store, 'metric_series');
    this.seriesHash = new Index(store, 'metric_series_hash');
    this.seriesCache = new SeriesCache((metricId) => this.seriesOf(metricId), opts.cachedSeries);
  }

  get(projectId: string, id: string): MetricRecord | undefined {
    return this.metrics.get(projectId, id);
  }

  /** Find by id alone. */
  byId(id: string): MetricRecord | undefined {
    return this.metrics.byId(id);
  }

  /** Every metric of a project, live and scheduled. */
  list(projectId: string): MetricRecord[] {
    return this.metrics.list(projectId);
  }

  /** Every series of a metric read from LMDB (the cache's source; requests use `seriesView`). */
  seriesOf(metricId: string): MetricSeriesRecord[] {
    return this.series.list(metricId);
  }

  /**
   * A metric's series from memory (loaded from LMDB on first use). Outside a transaction only: it
   * shows committed writes, not those staged by the transaction running.
   */
  seriesView(metric: Pick<MetricRecord, 'id' | 'definition_revision'>): MetricSeriesView {
    return this.seriesCache.of(metric.id, metric.definition_revision);
  }

  /** Series registered under a metric, counted in LMDB (series-limit.ts keeps the count on the record after). */
  countSeries(metricId: string): number {
    return this.series.db.getKeysCount({ start: [metricId, ''], end: [metricId, '\uffff'] });
  }

  stageMetric(metric: MetricRecord): void {
    void this.metrics.put(metric.project_id, metric);
    this.store.afterCommit(
      () => this.seriesCache.revised(metric.id, metric.definition_revision),
      () => this.seriesCache.drop(metric.id),
    );
  }

  /** The series of `metricId` with this hash, if registered. */
  seriesByHash(metricId: string, hash: string): MetricSeriesRecord | undefined {
    const id = this.seriesHash.get(`${metricId}\u0000${hash}`);
    return id === undefined ? undefined : this.series.get(metricId, id);
  }

  /**
   * Stage a series write. `known`: the series is registered already under this id and hash, so its
   * hash index entry is left as it is (a batch rewrites the `last_value` of every series it saw:
   * one write each, not two).
   */
  stageSeries(series: MetricSeriesRecord, known = false): void {
    void this.series.put(series.metric_id, series);
    if (!known) void this.seriesHash.put(`${series.metric_id}\u0000${series.hash}`, series.id);
    this.store.afterCommit(
      () => this.seriesCache.committed(series),
      () => this.seriesCache.drop(series.metric_id),
    );
  }

  /** Stage the removal of a metric with its series. */
  stageRemoval(metric: MetricRecord): void {
    for (const s of this.seriesOf(metric.id)) {
      void this.series.remove(metric.id, s.id);
      void this.seriesHash.remove(`${metric.id}\u0000${s.hash}`);
    }
    void this.metrics.remove(metric.project_id, metric.id);
    const drop = () => this.seriesCache.drop(metric.id);
    this.store.afterCommit(drop, drop);
  }
}
