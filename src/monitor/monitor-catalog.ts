import { iso, type Clock } from '../clock.js';
import { ApiError, notFound, type FieldIssue } from '../errors.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/db.js';
import type { ProjectRecord } from '../catalog/records.js';
import { nextUpdatedAt } from '../catalog/timestamps.js';
import type { MetricRecord } from '../rollup/metric-records.js';
import { describeCondition } from './condition-text.js';
import type { SlotOutcome } from './evaluate.js';
import { nextMonitorSlot } from './monitor-cron.js';
import {
  CONDITION_FIELDS,
  MONITOR_DEFAULTS,
  MONITOR_LIMITS,
  type AlertRecord,
  type DisabledReason,
  type MonitorRecord,
  type MonitorSettings,
  type MonitorStatus,
  type SeriesStateRecord,
} from './monitor-records.js';
import { monitorRuleIssues } from './monitor-rules.js';
import { MonitorStore } from './monitor-store.js';

/** A create (or preview) body: every field optional (spec), `metric_id` checked by the route. */
export type MonitorInput = Partial<MonitorSettings> & { status?: 'active' | 'paused'; metric_id?: string };
/** An update body: any setting (docs/monitors.md, "Update"). */
export type MonitorChange = Partial<MonitorSettings> & { metric_id?: string };

/** Settings with defaults applied; the default name comes from the metric and the condition. */
export function withDefaults(input: MonitorInput, metric: MetricRecord): MonitorSettings {
  const settings = { ...MONITOR_DEFAULTS, name: '', ...stripUndefined(input) } as MonitorSettings & {
    status?: unknown;
    metric_id?: unknown;
  };
  delete settings.status;
  delete settings.metric_id;
  if (!input.name) settings.name = defaultName(metric, settings);
  return settings;
}

function defaultName(metric: MetricRecord, s: MonitorSettings): string {
  const name = `${metric.name}: ${describeCondition(s)}`;
  return name.length <= MONITOR_LIMITS.nameMax ? name : `${name.slice(0, MONITOR_LIMITS.nameMax - 1)}…`;
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** Throw the 400 of every rule broken (spec rules 1–7; monitor-rules.ts). */
export function assertRules(issues: FieldIssue[]): void {
  if (issues.length === 0) return;
  throw new ApiError(
    'request_validation_failed',
    `Invalid monitor: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`,
    { details: issues },
  );
}

/** URL-safe slug of a name: lowercase letters, digits and dashes. */
export function slugify(name: string): string {
  const s = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48);
  return s || 'monitor';
}

/** Stages the notifications of an alert event inside the transaction that opens, repeats or ends it. */
export interface AlertEventSink {
  stageAlertEvent(
    kind: 'alert.opened' | 'alert.resolved' | 'alert.repeat',
    monitor: MonitorRecord,
    alert: AlertRecord,
    at: number,
  ): void;
}

/** What an end of a period is recorded with when the condition did not clear by itself. */
export type EndReason = 'paused' | 'deleted' | 'condition_changed' | DisabledReason;

/**
 * Monitors and their alerts: create, update, pause, resume, delete, disable, and each evaluated slot
 * stored with the alerts it opens and closes in one LMDB transaction (docs/monitors.md). Listeners
 * hear every monitor a committed write changed (the runner re-registers its job from there).
 */
export class MonitorCatalog {
  readonly store: MonitorStore;
  private readonly listeners = new Set<(monitorId: string) => void>();
  /** Where alert events go, inside the transaction that makes them (the notifier's outbox); null: nowhere. */
  events: AlertEventSink | null = null;

  constructor(
    private readonly db: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.store = new MonitorStore(db);
  }

  onChange(listener: (monitorId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(id: string): void {
    for (const l of this.listeners) {
      try {
        l(id);
      } catch (err) {
        this.log.error({ err, monitor_id: id }, 'a monitor change listener failed');
      }
    }
  }

  get(projectId: string, id: string): MonitorRecord | undefined {
    return this.store.get(projectId, id);
  }

  list(projectId: string): MonitorRecord[] {
    return this.store.list(projectId);
  }

  /** The next slot after `after` while the monitor evaluates; null when paused, disabled or past its expiry. */
  nextEvaluation(m: Pick<MonitorRecord, 'status' | 'schedule_cron' | 'expires_at'>, after: number): string | null {
    if (m.status !== 'active') return null;
    const next = nextMonitorSlot(m.schedule_cron, after);
    if (next === null) return null;
    if (m.expires_at !== null && next > Date.parse(m.expires_at)) return null;
    return iso(next);
  }

  async create(project: ProjectRecord, metric: MetricRecord, input: MonitorInput): Promise<MonitorRecord> {
    const now = this.clock.now();
    const settings = withDefaults(input, metric);
    const status: MonitorStatus = input.status ?? 'active';
    assertRules(monitorRuleIssues(settings, metric, { status, now, checkExpiry: true }));
    const created = await this.db.transaction(() => {
      const existing = this.store.list(project.id);
      if (existing.length >= MONITOR_LIMITS.perProject) {
        throw new ApiError(
          'conflict',
          `A project holds at most ${MONITOR_LIMITS.perProject} monitors; delete one first`,
        );
      }
      const taken = new Set(existing.map((m) => m.slug));
      const base = slugify(settings.name);
      let slug = base;
      for (let n = 2; taken.has(slug); n++) slug = `${base}-${n}`;
      const at = iso(now);
      const m: MonitorRecord = {
        ...settings,
        id: newId('monitor'),
        slug,
        team_id: project.team_id,
        project_id: project.id,
        metric_id: metric.id,
        created_at: at,
        updated_at: at,
        status,
        disabled_reason: null,
        last_evaluated_at: null,
        next_evaluation_at: null,
        last_slot_at: null,
        alert_seq: 0,
        last_ready: null,
      };
      m.next_evaluation_at = this.nextEvaluation(m, now);
      this.store.stageMonitor(m);
      return m;
    });
    this.notify(created.id);
    return created;
  }

  /**
   * Change settings. A change of the condition (CONDITION_FIELDS) ends the open alerts
   * (`condition_changed`) and restarts every series' state; a cron or expiry change moves
   * `next_evaluation_at`. `metric_id` is fixed: sending another is a 400.
   */
  async update(current: MonitorRecord, metric: MetricRecord, change: MonitorChange): Promise<MonitorRecord> {
    if (change.metric_id !== undefined && change.metric_id !== current.metric_id) {
      throw new ApiError(
        'request_validation_failed',
        'body.metric_id is fixed for the life of a monitor; create a new monitor for another metric',
        {
          details: [{ field: 'body.metric_id', message: 'is fixed for the life of a monitor' }],
        },
      );
    }
    const now = this.clock.now();
    const { metric_id: _ignored, ...settings } = stripUndefined(change);
    const merged: MonitorRecord = { ...current, ...settings };
    const expiryChanged = change.expires_at !== undefined && change.expires_at !== current.expires_at;
    assertRules(monitorRuleIssues(merged, metric, { status: current.status, now, checkExpiry: expiryChanged }));
    const conditionChanged = CONDITION_FIELDS.some(
      (f) => change[f] !== undefined && JSON.stringify(change[f]) !== JSON.stringify(current[f]),
    );
    const out = await this.db.transaction(() => {
      const m = this.mustReread(current);
      const next: MonitorRecord = { ...m, ...settings, updated_at: nextUpdatedAt(this.clock, m.updated_at) };
      if (conditionChanged) this.stageEndAll(next, now, 'condition_changed');
      next.next_evaluation_at = this.nextEvaluation(next, Math.max(now, next.last_slot_at ?? 0));
      this.store.stageMonitor(next);
      return next;
    });
    this.notify(out.id);
    return out;
  }

  /** Pause: stops evaluating; open alerts end now (`paused`) and series states restart. Pausing a paused monitor changes nothing. */
  async pause(current: MonitorRecord): Promise<MonitorRecord> {
    if (current.status === 'paused') return current;
    const now = this.clock.now();
    const out = await this.db.transaction(() => {
      const m = this.mustReread(current);
      const next: MonitorRecord = {
        ...m,
        status: 'paused',
        disabled_reason: null,
        next_evaluation_at: null,
        updated_at: nextUpdatedAt(this.clock, m.updated_at),
      };
      this.stageEndAll(next, now, 'paused');
      this.store.stageMonitor(next);
      return next;
    });
    this.notify(out.id);
    return out;
  }

  /**
   * Resume a paused or disabled monitor: it evaluates from its next slot on, with fresh series
   * states (slots that passed while paused are not evaluated). Refused (409) while its metric is
   * deleted or in error, or after its expiry. Resuming an active monitor changes nothing.
   */
  async resume(current: MonitorRecord, metric: MetricRecord | undefined): Promise<MonitorRecord> {
    if (current.status === 'active') return current;
    if (!metric || metric.deleted_at)
      throw new ApiError('conflict', `Monitor ${current.id} cannot resume: its metric ${current.metric_id} is deleted`);
    if (metric.status === 'error')
      throw new ApiError(
        'conflict',
        `Monitor ${current.id} cannot resume: its metric ${metric.id} is in error (${metric.error_message ?? 'see the metric'}); fix the metric first`,
      );
    const now = this.clock.now();
    if (current.expires_at !== null && Date.parse(current.expires_at) <= now) {
      throw new ApiError(
        'conflict',
        `Monitor ${current.id} expired at ${current.expires_at}; update expires_at to a later time or null first`,
      );
    }
    const out = await this.db.transaction(() => {
      const m = this.mustReread(current);
      // Slots that passed while paused are never evaluated late: evaluation restarts at the next slot.
      const next: MonitorRecord = {
        ...m,
        status: 'active',
        disabled_reason: null,
        last_slot_at: now,
        updated_at: nextUpdatedAt(this.clock, m.updated_at),
      };
      next.next_evaluation_at = this.nextEvaluation(next, now);
      this.store.stageMonitor(next);
      return next;
    });
    this.notify(out.id);
    return out;
  }

  /** Delete: the monitor and its states go; its open alerts end now (`deleted`) and stay listed. */
  async remove(current: MonitorRecord): Promise<void> {
    const now = this.clock.now();
    await this.db.transaction(() => {
      const m = this.store.get(current.project_id, current.id);
      if (!m) return;
      this.stageEndAll(m, now, 'deleted');
      this.store.stageMonitorRemoval(m);
    });
    this.notify(current.id);
  }

  /** The service stops a monitor itself (metric deleted or in error, expired): `disabled` with the reason; open alerts end. */
  async disable(monitorId: string, reason: DisabledReason, at: number): Promise<MonitorRecord | undefined> {
    const out = await this.db.transaction(() => {
      const m = this.store.byId(monitorId);
      if (m?.status !== 'active') return undefined;
      const next: MonitorRecord = {
        ...m,
        status: 'disabled',
        disabled_reason: reason,
        next_evaluation_at: null,
        updated_at: nextUpdatedAt(this.clock, m.updated_at),
      };
      this.stageEndAll(next, at, reason);
      this.store.stageMonitor(next);
      return next;
    });
    if (out) {
      this.log.info({ monitor_id: monitorId, reason }, 'monitor disabled');
      this.notify(monitorId);
    }
    return out;
  }

  /**
   * Store one evaluated slot: the states, the alerts opened and closed, and the monitor's
   * `last_slot_at`, in one transaction. A slot at or before the last one stored is refused (false),
   * so no slot is ever applied twice, whatever a restart or a racing run does; so is a slot of a
   * monitor no longer active, or one whose settings changed since `evaluated` was read.
   */
  async recordSlot(
    evaluated: MonitorRecord,
    at: number,
    outcome: SlotOutcome,
    metric: MetricRecord,
  ): Promise<{ applied: boolean; opened: AlertRecord[]; closed: AlertRecord[] }> {
    const opened: AlertRecord[] = [];
    const closed: AlertRecord[] = [];
    const applied = await this.db.transaction(() => {
      opened.length = 0;
      closed.length = 0;
      const m = this.store.get(evaluated.project_id, evaluated.id);
      if (
        m?.status !== 'active' ||
        m.updated_at !== evaluated.updated_at ||
        (m.last_slot_at !== null && m.last_slot_at >= at)
      )
        return false;
      const next: MonitorRecord = {
        ...m,
        last_slot_at: at,
        last_evaluated_at: iso(this.clock.now()),
        last_ready: true,
      };
      const byKey = new Map(outcome.states.map((s) => [s.id, s]));
      for (const c of outcome.closed) {
        const a = this.store.alert(c.alert_id);
        if (!a || a.ended_at !== null) continue;
        const ended = { ...a, ended_at: c.ended_at };
        this.store.stageAlert(ended);
        closed.push(ended);
        this.events?.stageAlertEvent('alert.resolved', m, ended, at);
      }
      const description = describeCondition(m);
      for (const o of outcome.opened) {
        next.alert_seq++;
        const a: AlertRecord = {
          id: newId('alert'),
          slug: `${m.slug}-${next.alert_seq}`,
          team_id: m.team_id,
          project_id: m.project_id,
          metric_id: m.metric_id,
          metric_name: metric.name,
          monitor_id: m.id,
          monitor_name: m.name,
          created_at: o.created_at,
          ended_at: o.ended_at,
          series_hash: o.series_hash,
          series_label: o.series_label,
          trigger_value: o.trigger_value,
          threshold_value: m.threshold_value ?? 0,
          condition_description: description,
          end_reason: null,
        };
        this.store.stageAlert(a);
        opened.push(a);
        const s = byKey.get(o.key);
        if (s && o.ended_at === null) {
          s.open_alert_id = a.id;
          s.last_notified_at = iso(at);
        }
        this.events?.stageAlertEvent('alert.opened', m, a, at);
      }
      // Still open and not notified for `notify_repeat_minutes`: notify again.
      const repeatMs = (m.notify_repeat_minutes ?? 0) * 60_000;
      const justOpened = new Set(opened.map((a) => a.id));
      for (const s of outcome.states) {
        if (!repeatMs || !s.open_alert_id || justOpened.has(s.open_alert_id)) continue;
        const last = s.last_notified_at ? Date.parse(s.last_notified_at) : 0;
        if (at - last < repeatMs) continue;
        const a = this.store.alert(s.open_alert_id);
        if (!a || a.ended_at !== null) continue;
        s.last_notified_at = iso(at);
        this.events?.stageAlertEvent('alert.repeat', m, a, at);
      }
      for (const s of outcome.states) this.store.stageState(s);
      for (const key of outcome.removed) this.store.stageStateRemoval(m.id, key);
      next.next_evaluation_at = this.nextEvaluation(next, Math.max(at, this.clock.now()));
      this.store.stageMonitor(next);
      return true;
    });
    return { applied, opened, closed };
  }

  /** A slot whose window is not complete yet: shown as not ready; nothing else changes. */
  async recordNotReady(evaluated: MonitorRecord): Promise<void> {
    // Already marked (the common case: a thousand monitors waiting, asked every second): no write
    // transaction at all — an empty one still queues behind the pipeline's commits.
    if (this.store.get(evaluated.project_id, evaluated.id)?.last_ready === false) return;
    await this.db.transaction(() => {
      const m = this.store.get(evaluated.project_id, evaluated.id);
      if (!m || m.last_ready === false) return;
      this.store.stageMonitor({ ...m, last_ready: false });
    });
  }

  /** Move `next_evaluation_at` (the runner, after a slot it skipped); outside any other change. */
  async setNextEvaluation(monitorId: string, at: number): Promise<void> {
    await this.db.transaction(() => {
      const m = this.store.byId(monitorId);
      if (!m) return;
      const next = this.nextEvaluation(m, at);
      if (next !== m.next_evaluation_at) this.store.stageMonitor({ ...m, next_evaluation_at: next });
    });
  }

  /** Inside a transaction: end every open alert of `m` at `at` with `reason`, and drop its states. */
  private stageEndAll(m: MonitorRecord, at: number, reason: EndReason): void {
    for (const s of this.store.statesOf(m.id)) {
      if (s.open_alert_id) {
        const a = this.store.alert(s.open_alert_id);
        if (a && a.ended_at === null) {
          const ended = { ...a, ended_at: iso(Math.max(at, Date.parse(a.created_at))), end_reason: reason };
          this.store.stageAlert(ended);
          this.events?.stageAlertEvent('alert.resolved', m, ended, at);
        }
      }
      this.store.stageStateRemoval(m.id, s.id);
    }
  }

  private mustReread(current: MonitorRecord): MonitorRecord {
    const m = this.store.get(current.project_id, current.id);
    if (!m) throw notFound(`Monitor ${current.id}`);
    return m;
  }

  statesOf(monitorId: string): SeriesStateRecord[] {
    return this.store.statesOf(monitorId);
  }

  /** The most recent alerts of a monitor, newest first. */
  recentAlerts(m: MonitorRecord, limit: number = MONITOR_LIMITS.recentAlerts): AlertRecord[] {
    return this.store
      .alertsOfMetric(m.metric_id)
      .filter((a) => a.monitor_id === m.id)
      .sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id))
      .slice(0, limit);
  }

  hasOpenAlerts(metricId: string): boolean {
    return this.store.hasOpenAlerts(metricId);
  }
}
