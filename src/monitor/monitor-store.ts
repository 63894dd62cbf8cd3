import type { Database } from 'lmdb';
import type { Store } from '../store/db.js';
import { Index, Table } from '../store/table.js';
import type { AlertRecord, MonitorRecord, SeriesStateRecord } from './monitor-records.js';

const HIGH = '\uffff';

/**
 * LMDB storage of monitors (under their project), their series states (under the monitor) and
 * alerts (under their metric). `openAlerts` lists the open ones by metric, so `has_triggered_monitors`
 * and the attention items are one range read. Writes (`stage*`) run inside `store.transaction`.
 */
export class MonitorStore {
  readonly monitors: Table<MonitorRecord>;
  readonly monitorProject: Index;
  readonly states: Table<SeriesStateRecord>;
  readonly alerts: Table<AlertRecord>;
  /** alert id → metric id. */
  readonly alertMetric: Index;
  /** `<metric id> NUL <alert id>` → monitor id, for every alert still open. */
  readonly openAlerts: Database<string, string>;

  constructor(readonly store: Store) {
    this.monitors = new Table(store, 'monitors');
    this.monitorProject = new Index(store, 'monitor_project');
    this.states = new Table(store, 'monitor_series_states');
    this.alerts = new Table(store, 'alerts');
    this.alertMetric = new Index(store, 'alert_metric');
    this.openAlerts = store.db<string, string>('alerts_open');
  }

  get(projectId: string, id: string): MonitorRecord | undefined {
    return this.monitors.get(projectId, id);
  }

  byId(id: string): MonitorRecord | undefined {
    const projectId = this.monitorProject.get(id);
    return projectId ? this.monitors.get(projectId, id) : undefined;
  }

  list(projectId: string): MonitorRecord[] {
    return this.monitors.list(projectId);
  }

  /** Every monitor of every project (start-up scheduling). */
  *all(): Iterable<MonitorRecord> {
    for (const { value } of this.monitors.all()) yield value;
  }

  statesOf(monitorId: string): SeriesStateRecord[] {
    return this.states.list(monitorId);
  }

  stageMonitor(m: MonitorRecord): void {
    void this.monitors.put(m.project_id, m);
    void this.monitorProject.put(m.id, m.project_id);
  }

  stageState(s: SeriesStateRecord): void {
    void this.states.put(s.monitor_id, s);
  }

  stageStateRemoval(monitorId: string, key: string): void {
    void this.states.remove(monitorId, key);
  }

  /** Remove a monitor and its states (its alerts stay: they are history). */
  stageMonitorRemoval(m: MonitorRecord): void {
    for (const s of this.statesOf(m.id)) void this.states.remove(m.id, s.id);
    void this.monitors.remove(m.project_id, m.id);
    void this.monitorProject.remove(m.id);
  }

  alert(id: string): AlertRecord | undefined {
    const metricId = this.alertMetric.get(id);
    return metricId ? this.alerts.get(metricId, id) : undefined;
  }

  alertsOfMetric(metricId: string): AlertRecord[] {
    return this.alerts.list(metricId);
  }

  stageAlert(a: AlertRecord): void {
    void this.alerts.put(a.metric_id, a);
    void this.alertMetric.put(a.id, a.metric_id);
    const key = `${a.metric_id}\u0000${a.id}`;
    if (a.ended_at === null) void this.openAlerts.put(key, a.monitor_id);
    else void this.openAlerts.remove(key);
  }

  /** Ids of the open alerts of a metric, with their monitor. */
  openOfMetric(metricId: string): Array<{ alertId: string; monitorId: string }> {
    const out: Array<{ alertId: string; monitorId: string }> = [];
    for (const { key, value } of this.openAlerts.getRange({
      start: `${metricId}\u0000`,
      end: `${metricId}\u0000${HIGH}`,
    })) {
      out.push({ alertId: key.slice(metricId.length + 1), monitorId: value });
    }
    return out;
  }

  hasOpenAlerts(metricId: string): boolean {
    for (const _ of this.openAlerts.getKeys({ start: `${metricId}\u0000`, end: `${metricId}\u0000${HIGH}`, limit: 1 }))
      return true;
    return false;
  }
}
