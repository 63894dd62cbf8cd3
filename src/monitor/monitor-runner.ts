import type { Clock } from '../clock.js';
import { monitorEvaluationLag } from '../self-metrics/registry.js';
import type { Logger } from '../log.js';
import type { MetricCatalog } from '../rollup/metric-catalog.js';
import type { JobHandle, Scheduler } from '../schedule/types.js';
import { applySlot, verdicts, watchedSeries } from './evaluate.js';
import type { MonitorCatalog } from './monitor-catalog.js';
import type { MonitorRecord } from './monitor-records.js';
import { readWindow, type MonitorAggregation, type MonitorWindow } from './window-reader.js';
import type { MetricRecord } from '../rollup/metric-records.js';

export interface MonitorRunnerDeps {
  monitors: MonitorCatalog;
  metrics: MetricCatalog;
  aggregation: MonitorAggregation;
  /** The node's scheduler; `runDue` when it has one (tests that move a ManualClock). */
  scheduler: Scheduler & { runDue?(): Promise<void> };
  clock: Clock;
  log: Logger;
  /**
   * The metric's `complete_through_at` (epoch ms), cheap and in memory (the rollups' own): a slot whose
   * window has not completed waits without an aggregation read, and is tried again each CATCH_UP_MS.
   * Absent: the read's answer says (tests with a runner of their own).
   */
  completeThrough?(metricId: string): number | null;
}

/** What one evaluation did (tests and the lag metric read it). */
export type SlotResult = 'applied' | 'not_ready' | 'skipped' | 'disabled';

/**
 * How often a slot whose window was not complete is tried again (until the next slot supersedes it):
 * the alert of data crossing a threshold opens within this much of the data completing (issue 23's
 * target: 5 s). A try costs one `completeThrough` per metric until the data is complete, so it can be
 * short: at 1 s it was up to a second of every evaluation's lag after the data completed.
 */
export const CATCH_UP_MS = 250;
/** Evaluations reading the rollups at once: every monitor of a minute comes due in the same second, and ingest shares DuckDB. */
export const EVALUATION_CONCURRENCY = 8;
/** Waiting slots evaluated side by side per step of the catch-up. */
const RETRY_BATCH = 100;
/** A `next_evaluation_at` this far in the past was missed, not late (the scheduler's late tolerance). */
const STALE_NEXT_MS = 30_000;
/** How often stale `next_evaluation_at`s are looked for. */
const STALE_CHECK_MS = 5_000;
/** How long a window read is shared between monitors asking the same (metric, window, value) for one slot. */
const SHARED_WINDOW_MS = 30_000;

/**
 * Runs every active monitor on its `schedule_cron` (docs/monitors.md, "Evaluation"): one durable
 * scheduler job per monitor (`monitor:<id>`, policy `run_latest`: after a restart the latest slot
 * missed is evaluated once), reading the window through the aggregation service in-process and
 * storing the outcome with its alerts in one transaction (MonitorCatalog.recordSlot, which never
 * applies a slot twice). A slot whose window is not complete yet is retried every CATCH_UP_MS until
 * it is, or until the monitor's next slot replaces it. Monitors follow their metric: a metric deleted
 * or in `error` disables its monitors, with the reason.
 */
export class MonitorRunner {
  private readonly jobs = new Map<string, { handle: JobHandle; cron: string }>();
  /** Monitor id → the slot waiting for complete data. */
  private readonly waiting = new Map<string, number>();
  private readonly unsubscribe: Array<() => void> = [];
  /** Window reads of the current slots, shared by monitors asking the same one (key: windowKey). */
  private readonly windows = new Map<string, { at: number; read: Promise<MonitorWindow> }>();
  private running = 0;
  private readonly queue: Array<() => void> = [];
  private catchUp: JobHandle | null = null;
  /** When `refreshStaleNext` last looked (clock ms). */
  private refreshedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: MonitorRunnerDeps) {}

  start(): void {
    const metricIds = new Set<string>();
    for (const m of this.deps.monitors.store.all()) {
      this.sync(m.id);
      if (m.status === 'active') metricIds.add(m.metric_id);
    }
    this.unsubscribe.push(this.deps.monitors.onChange((id) => this.sync(id)));
    this.unsubscribe.push(this.deps.metrics.onChange((metricId) => void this.metricChanged(metricId)));
    // A metric deleted or put in error just before a crash (its change committed, the monitors' not
    // yet): heard at start, not at the monitor's next slot.
    for (const id of metricIds) void this.metricChanged(id);
    this.catchUp = this.deps.scheduler.register({
      name: 'monitor-catch-up',
      schedule: { everyMs: CATCH_UP_MS },
      run: async () => {
        await this.retryWaiting();
        await this.refreshStaleNext();
      },
    });
  }

  /**
   * Stop listening. Jobs are not unregistered: that would remove their durable slots, and a restart
   * must find them to evaluate the slot it missed; the scheduler stops them (before this runs).
   */
  async stop(): Promise<void> {
    for (const u of this.unsubscribe.splice(0)) u();
    this.jobs.clear();
    this.catchUp = null;
  }

  /** Register, reschedule or drop the job of a monitor after a change. */
  sync(id: string): void {
    const m = this.deps.monitors.store.byId(id);
    const job = this.jobs.get(id);
    if (m?.status !== 'active') {
      this.waiting.delete(id);
      if (job) {
        this.jobs.delete(id);
        void job.handle.unregister();
      }
      return;
    }
    if (job) {
      if (job.cron !== m.schedule_cron) {
        job.handle.reschedule({ cron: m.schedule_cron });
        job.cron = m.schedule_cron;
      }
      return;
    }
    const handle = this.deps.scheduler.register({
      name: `monitor:${id}`,
      schedule: { cron: m.schedule_cron },
      durable: true,
      missed: 'run_latest',
      run: (slot) => {
        monitorEvaluationLag.observe(Math.max(0, this.deps.clock.now() - slot.at) / 1000);
        return this.evaluateSlot(id, slot.at).then(() => undefined);
      },
    });
    this.jobs.set(id, { handle, cron: m.schedule_cron });
  }

  /** Evaluate one slot of a monitor now (the scheduler's run; tests call it directly too). */
  async evaluateSlot(id: string, at: number): Promise<SlotResult> {
    const { monitors, metrics, log } = this.deps;
    const m = monitors.store.byId(id);
    if (m?.status !== 'active') return 'skipped';
    if (m.last_slot_at !== null && m.last_slot_at >= at) return 'skipped';
    if (m.expires_at !== null && at > Date.parse(m.expires_at)) {
      await monitors.disable(id, 'expired', Date.parse(m.expires_at));
      return 'disabled';
    }
    const metric = metrics.byId(m.metric_id);
    if (!metric || metric.deleted_at) {
      await monitors.disable(id, 'metric_deleted', at);
      return 'disabled';
    }
    if (metric.status === 'error') {
      await monitors.disable(id, 'metric_error', at);
      return 'disabled';
    }
    const complete = this.deps.completeThrough?.(metric.id);
    if (complete !== undefined && (complete === null || complete < at)) {
      // Not complete yet: no read (a thousand monitors waiting would make a thousand reads a second).
      this.waiting.set(id, at);
      await monitors.recordNotReady(m);
      return 'not_ready';
    }
    try {
      const window = await this.limited(() => this.sharedWindow(metric, m, at));
      if (!window.ready) {
        // Never a false verdict on partial data: wait for the window to complete.
        this.waiting.set(id, at);
        await monitors.recordNotReady(m);
        return 'not_ready';
      }
      if (this.waiting.get(id) === at) this.waiting.delete(id);
      const previous = new Map(monitors.statesOf(id).map((s) => [s.id, s]));
      const judged = verdicts(m, watchedSeries(m, metric.group_by.length > 0, window.series));
      const outcome = applySlot(m, at, judged, previous);
      const res = await monitors.recordSlot(m, at, outcome, metric);
      if (res.opened.length || res.closed.length)
        log.info(
          {
            monitor_id: id,
            slot: new Date(at).toISOString(),
            opened: res.opened.map((a) => a.id),
            closed: res.closed.map((a) => a.id),
          },
          'monitor alerts',
        );
      return res.applied ? 'applied' : 'skipped';
    } catch (err) {
      log.warn({ err, monitor_id: id }, 'monitor evaluation failed; the next slot tries again');
      return 'skipped';
    }
  }

  /** Run `fn` when fewer than EVALUATION_CONCURRENCY reads are in flight. */
  private async limited<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= EVALUATION_CONCURRENCY) await new Promise<void>((r) => this.queue.push(r));
    this.running++;
    try {
      return await fn();
    } finally {
      this.running--;
      this.queue.shift()?.();
    }
  }

  /**
   * One read per (metric revision, window, chart value) and slot, shared by every monitor asking it:
   * ten monitors with different thresholds on one metric cost one aggregation read a minute. A read
   * that found the window incomplete is not kept (the retry must read again).
   */
  private sharedWindow(metric: MetricRecord, m: MonitorRecord, at: number): Promise<MonitorWindow> {
    const key = `${metric.id}:${metric.definition_revision}:${at}:${m.time_window_minutes}:${m.chart_value}`;
    const now = this.deps.clock.now();
    for (const [k, w] of this.windows) if (now - w.at > SHARED_WINDOW_MS || w.at > now) this.windows.delete(k);
    const kept = this.windows.get(key);
    if (kept) return kept.read;
    const read = readWindow(this.deps.aggregation, metric, m, at, this.deps.metrics.store.seriesView(metric));
    this.windows.set(key, { at: now, read });
    read.then(
      (w) => {
        if (!w.ready) this.windows.delete(key);
      },
      () => this.windows.delete(key),
    );
    return read;
  }

  /** Slots waiting for complete data: tried again, unless a later slot of the monitor has come. */
  private async retryWaiting(): Promise<void> {
    const now = this.deps.clock.now();
    const due: [string, number][] = [];
    const through = new Map<string, number | null>();
    for (const [id, at] of [...this.waiting]) {
      const job = this.jobs.get(id);
      const next = job?.handle.nextAt() ?? null;
      // The monitor's next slot is due: it supersedes this one.
      if (!job || (next !== null && next <= now && next > at)) {
        this.waiting.delete(id);
        continue;
      }
      // Still incomplete (one lookup per metric and tick, not per monitor): nothing to try yet.
      const metricId = this.deps.monitors.store.byId(id)?.metric_id;
      if (metricId !== undefined && this.deps.completeThrough) {
        let complete = through.get(metricId);
        if (complete === undefined) through.set(metricId, (complete = this.deps.completeThrough(metricId)));
        if (complete !== null && complete < at) continue;
      }
      due.push([id, at]);
    }
    // Monitors are independent: evaluated side by side, so their LMDB writes share commits instead
    // of a thousand sequential transactions once the data completes (reads stay limited by `limited`).
    for (let i = 0; i < due.length; i += RETRY_BATCH)
      await Promise.all(due.slice(i, i + RETRY_BATCH).map(([id, at]) => this.evaluateSlot(id, at)));
  }

  /**
   * Slots the scheduler counted as missed (the clock jumped forward, the loop stalled: a slot found
   * more than its late tolerance after its time is not run late) leave `next_evaluation_at` in the
   * past: it is moved to the next slot after now, so the API never shows a time that will not come.
   */
  private async refreshStaleNext(): Promise<void> {
    const now = this.deps.clock.now();
    // Every few seconds is soon enough, and reads every monitor: not at each catch-up tick.
    if (Math.abs(now - this.refreshedAt) < STALE_CHECK_MS) return;
    this.refreshedAt = now;
    for (const id of this.jobs.keys()) {
      if (this.waiting.has(id)) continue;
      const m = this.deps.monitors.store.byId(id);
      if (m?.status !== 'active' || m.next_evaluation_at === null) continue;
      if (Date.parse(m.next_evaluation_at) < now - STALE_NEXT_MS) await this.deps.monitors.setNextEvaluation(id, now);
    }
  }

  private async metricChanged(metricId: string): Promise<void> {
    const { monitors, metrics } = this.deps;
    const metric = metrics.byId(metricId);
    const projectId = metric?.project_id ?? this.projectOfMetric(metricId);
    if (!projectId) return;
    const reason = !metric || metric.deleted_at ? 'metric_deleted' : metric.status === 'error' ? 'metric_error' : null;
    if (!reason) return;
    for (const m of monitors.list(projectId)) {
      if (m.metric_id === metricId && m.status === 'active')
        await monitors.disable(m.id, reason, this.deps.clock.now());
    }
  }

  /** The project of a metric that is gone: from its monitors. */
  private projectOfMetric(metricId: string): string | undefined {
    for (const m of this.deps.monitors.store.all() as Iterable<MonitorRecord>)
      if (m.metric_id === metricId) return m.project_id;
    return undefined;
  }

  /** Run every job of the runner's own scheduler that is due now (tests that move a ManualClock). */
  async runDue(): Promise<void> {
    await this.deps.scheduler.runDue?.();
    await this.retryWaiting();
  }

  /** The catch-up job (registered at start). */
  catchUpJob(): JobHandle | null {
    return this.catchUp;
  }

  /** Jobs registered (tests). */
  jobNames(): string[] {
    return [...this.jobs.keys()];
  }
}
