import type { Store } from '../store/db.js';
import { Index, Table } from '../store/table.js';
import type { MetricRecord, MetricSeriesRecord } from './metric-records.js';

/**
 * LMDB storage of metrics. Metrics are kept under their project (`metricProject` finds the project
 * from the id alone); series under their metric. Writes (`stage*`) run inside `store.transaction`.
 */
export class MetricStore {
  readonly metrics: Table<MetricRecord>;
  readonly metricProject: Index;
  readonly series: Table<MetricSeriesRecord>;
  /** `<metric id> NUL <series hash>` → series id: the rollups find a series by the hash of its values. */
  readonly seriesHash: Index;

  constructor(readonly store: Store) {
    this.metrics = new Table(store, 'metrics');
    this.metricProject = new Index(store, 'metric_project');
    this.series = new Table(store, 'metric_series');
    this.seriesHash = new Index(store, 'metric_series_hash');
  }

  get(projectId: string, id: string): MetricRecord | undefined {
    return this.metrics.get(projectId, id);
  }

  /** Find by id alone. */
  byId(id: string): MetricRecord | undefined {
    const projectId = this.metricProject.get(id);
    return projectId ? this.metrics.get(projectId, id) : undefined;
  }

  /** Every metric of a project, live and scheduled. */
  list(projectId: string): MetricRecord[] {
    return this.metrics.list(projectId);
  }

  seriesOf(metricId: string): MetricSeriesRecord[] {
    return this.series.list(metricId);
  }

  stageMetric(metric: MetricRecord): void {
    void this.metrics.put(metric.project_id, metric);
    void this.metricProject.put(metric.id, metric.project_id);
  }

  /** The series of `metricId` with this hash, if registered. */
  seriesByHash(metricId: string, hash: string): MetricSeriesRecord | undefined {
    const id = this.seriesHash.get(`${metricId}\u0000${hash}`);
    return id === undefined ? undefined : this.series.get(metricId, id);
  }

  stageSeries(series: MetricSeriesRecord): void {
    void this.series.put(series.metric_id, series);
    void this.seriesHash.put(`${series.metric_id}\u0000${series.hash}`, series.id);
  }

  /** Stage the removal of a metric with its series. */
  stageRemoval(metric: MetricRecord): void {
    for (const s of this.seriesOf(metric.id)) {
      void this.series.remove(metric.id, s.id);
      void this.seriesHash.remove(`${metric.id}\u0000${s.hash}`);
    }
    void this.metrics.remove(metric.project_id, metric.id);
    void this.metricProject.remove(metric.id);
  }
}
