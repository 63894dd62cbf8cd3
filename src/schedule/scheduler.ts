import type { Database } from 'lmdb';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/db.js';
import { latestSlot, nextSlot, slotsBetween, validateUserCron } from './cron.js';
import type { JobDef, JobHandle, MissedPolicy, Scheduler, Schedule, SlotRun } from './types.js';

/** A durable job's slot as kept in LMDB (`schedule_slots`, keyed by job name). */
interface StoredSlot {
  /** The schedule the slot was computed for; a different one at register starts over. */
  schedule: string;
  next_at: number | null;
  last_at: number | null;
  /** Slots counted but not yet handed to a run. */
  missed: number;
}

export interface JobSchedulerOptions {
  clock: Clock;
  log: Logger;
  /** Needed for durable jobs. */
  store?: Store;
  /** Longest the one timer sleeps, so a wall-clock jump is noticed within it (default 1 s). */
  maxSleepMs?: number;
  /** A cron slot found due later than this (a stalled loop, a clock jump) is counted as missed, not run (default 30 s). */
  lateToleranceMs?: number;
  /** How long `stop` waits for runs in flight (default 10 s). */
  stopTimeoutMs?: number;
  /** Arm the timer (default true); tests may drive `runDue` alone. */
  timer?: boolean;
  /**
   * Whether the timer also runs jobs that come due by time (default true). False for a clock moved by hand
   * (the server passes false with an injected clock): time-due runs then happen only in `runDue`, where the
   * test says time has passed, while kicks still run on their own.
   */
  dueByTimer?: boolean;
}

interface Job {
  def: JobDef;
  schedule: Schedule;
  policy: MissedPolicy;
  nextAt: number | null;
  lastAt: number | null;
  missed: number;
  /** A run asked for by `kick` (or by a run-latest catch-up: `at` then names the slot). */
  kicked: { at: number | null } | null;
  running: Promise<void> | null;
  controller: AbortController;
  /** The last durable write, awaited before a run and at stop. */
  write: Promise<unknown>;
  gone: boolean;
}

const scheduleKey = (s: Schedule): string =>
  'cron' in s ? `cron:${s.cron}` : 'everyMs' in s ? `every:${s.everyMs}` : 'kick';

/**
 * One scheduler for every periodic or kicked job of the node, driven by the injected Clock: one timer
 * for all jobs (armed for the earliest due one, never longer than `maxSleepMs`), and `runDue` for tests
 * that move a ManualClock. A job never runs twice at once. Durable jobs keep `{ next_at, last_at }` in
 * LMDB, written before a run starts: a slot runs at most once even across a crash (a job that needs
 * more keeps its own state). Slots that passed while the node was down are counted into the next
 * run's `missed`, never run late — except with `run_latest`, which runs the latest of them once.
 */
export class JobScheduler implements Scheduler {
  private readonly jobs = new Map<string, Job>();
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly slots: Database<StoredSlot, string> | null;
  private readonly maxSleepMs: number;
  private readonly lateToleranceMs: number;
  private readonly stopTimeoutMs: number;
  private readonly useTimer: boolean;
  private readonly dueByTimer: boolean;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** Clock time the timer fires at (when armed). */
  private armedAt = Infinity;
  private started = false;
  private stopped = false;

  constructor(opts: JobSchedulerOptions) {
    this.clock = opts.clock;
    this.log = opts.log;
    this.slots = opts.store ? opts.store.db<StoredSlot, string>('schedule_slots') : null;
    this.maxSleepMs = opts.maxSleepMs ?? 1000;
    this.lateToleranceMs = opts.lateToleranceMs ?? 30_000;
    this.stopTimeoutMs = opts.stopTimeoutMs ?? 10_000;
    this.useTimer = opts.timer ?? true;
    this.dueByTimer = opts.dueByTimer ?? true;
  }

  /** Register a job (names are unique; a cron must be valid). Jobs registered before `start` wait for it. */
  register(def: JobDef): JobHandle {
    if (this.stopped) throw new Error(`scheduler stopped; cannot register job ${def.name}`);
    if (this.jobs.has(def.name)) throw new Error(`job ${def.name} is already registered`);
    checkSchedule(def.name, def.schedule);
    if (def.durable && !this.slots) throw new Error(`job ${def.name} is durable but the scheduler has no store`);
    const now = this.clock.now();
    const job: Job = {
      def,
      schedule: def.schedule,
      policy: def.missed ?? 'count',
      nextAt: null,
      lastAt: null,
      missed: 0,
      kicked: null,
      running: null,
      controller: new AbortController(),
      write: Promise.resolve(),
      gone: false,
    };
    const stored = def.durable ? this.slots!.get(def.name) : undefined;
    if (stored && stored.schedule === scheduleKey(def.schedule)) this.resume(job, stored, now);
    else {
      job.nextAt = firstSlot(def.schedule, now);
      if (def.durable) this.persist(job);
    }
    this.jobs.set(def.name, job);
    // Registering many jobs stays linear: the timer is re-armed only when this job is due before it fires.
    if (!this.timer || job.kicked || (job.nextAt !== null && job.nextAt < this.armedAt)) this.arm();
    return this.handle(job);
  }

  get(name: string): JobHandle | undefined {
    const job = this.jobs.get(name);
    return job ? this.handle(job) : undefined;
  }

  /** Arm the timer; jobs already due (a `run_latest` catch-up) run at once. */
  start(): void {
    this.started = true;
    this.arm();
  }

  /** Run every job that is due at `clock.now()` and wait for it and for every run in flight. */
  async runDue(): Promise<void> {
    if (this.stopped) return;
    const now = this.clock.now();
    for (const job of this.jobs.values()) this.dispatch(job, now);
    // A run may be followed by one more (a kick during it): wait for those too, boundedly.
    for (let i = 0; i < 100; i++) {
      const running = [...this.jobs.values()].map((j) => j.running).filter((r) => r !== null);
      if (running.length === 0) break;
      await Promise.all(running);
    }
    this.arm();
  }

  /** Abort every job's signal, wait (bounded) for runs in flight, then `stop` each job in reverse registration order. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const jobs = [...this.jobs.values()];
    for (const job of jobs) job.controller.abort();
    const inFlight = Promise.all(jobs.map((j) => j.running));
    let timeout: ReturnType<typeof setTimeout> | undefined;
    const timedOut = await Promise.race([
      inFlight.then(() => false),
      new Promise<boolean>((r) => (timeout = setTimeout(() => r(true), this.stopTimeoutMs))),
    ]);
    clearTimeout(timeout);
    if (timedOut)
      this.log.warn(
        { jobs: jobs.filter((j) => j.running).map((j) => j.def.name) },
        'scheduler stop: runs still in flight after the timeout',
      );
    for (const job of jobs.reverse()) await this.stopJob(job);
    await Promise.all(jobs.map((j) => j.write));
    this.jobs.clear();
  }

  /** A durable job's stored slot, read back at register: passed slots are counted (or the latest one run). */
  private resume(job: Job, stored: StoredSlot, now: number): void {
    job.lastAt = stored.last_at;
    job.missed = stored.missed;
    const s = job.schedule;
    if (stored.next_at === null || stored.next_at > now || !('cron' in s)) {
      // Not yet due, or a period/kick job: a passed period runs once, soon (maintenance work, not user slots).
      job.nextAt = stored.next_at ?? firstSlot(s, now);
      return;
    }
    // `next_at` never started (it is advanced before a run): it and every slot after it up to now passed.
    const passed = 1 + slotsBetween(s.cron, stored.next_at, now);
    if (job.policy === 'run_latest') {
      const latest = latestSlot(s.cron, stored.next_at - 1, now) ?? stored.next_at;
      job.missed += passed - 1;
      job.kicked = { at: latest };
    } else job.missed += passed;
    job.nextAt = nextSlot(s.cron, now);
  }

  /** Start the job's run when it is due (or count a slot that comes due while it runs). */
  private dispatch(job: Job, now: number, kicksOnly = false): void {
    if (job.gone || this.stopped) return;
    const cron = 'cron' in job.schedule ? job.schedule.cron : null;
    const due = !kicksOnly && job.nextAt !== null && job.nextAt <= now;
    if (!due && !job.kicked) return;
    let at = now;
    if (due) {
      if (cron !== null) {
        const latest = latestSlot(cron, job.nextAt! - 1, now) ?? job.nextAt!;
        // Slots before the latest passed without a run; the latest runs unless it is too late or busy.
        job.missed += slotsBetween(cron, job.nextAt! - 1, latest) - 1;
        job.nextAt = nextSlot(cron, now);
        if (job.running || now - latest > this.lateToleranceMs) {
          job.missed++;
          return;
        }
        at = latest;
      } else if (job.running)
        return; // a period job runs again once the current run ends
      else job.nextAt = 'everyMs' in job.schedule ? now + job.schedule.everyMs : null;
    } else {
      if (job.running) return; // the kick runs after the run in flight
      at = job.kicked!.at ?? now;
    }
    job.kicked = null;
    this.launch(job, at);
  }

  private launch(job: Job, at: number): void {
    const missed = job.missed;
    job.missed = 0;
    job.lastAt = at;
    const signal = job.controller.signal;
    const run = async () => {
      // Before the run: a crash during it does not run this slot again. A slot that could not be
      // stored is not run (it could run twice); it is counted instead.
      if (job.def.durable && !(await this.persist(job))) {
        job.missed += missed + 1;
        return;
      }
      const slot: SlotRun = { at, missed, signal };
      await job.def.run(slot);
    };
    job.running = run()
      .catch((err: unknown) => this.log.error({ err, job: job.def.name }, 'scheduled job failed'))
      .finally(() => {
        job.running = null;
        if (!this.stopped && !job.gone) {
          // A kick or a period that came due during the run.
          this.dispatch(job, this.clock.now(), !this.dueByTimer);
          this.arm();
        }
      });
  }

  /** Queue a write of the job's slot after its earlier ones; resolves false (logged) when it failed. */
  private persist(job: Job): Promise<boolean> {
    const record: StoredSlot = {
      schedule: scheduleKey(job.schedule),
      next_at: job.nextAt,
      last_at: job.lastAt,
      missed: job.missed,
    };
    const written = job.write
      .then(() => this.slots!.put(job.def.name, record))
      .then(
        () => true,
        (err: unknown) => {
          this.log.error({ err, job: job.def.name }, 'could not store the job slot');
          return false;
        },
      );
    job.write = written;
    return written;
  }

  private async stopJob(job: Job): Promise<void> {
    try {
      await job.def.stop?.();
    } catch (err) {
      this.log.error({ err, job: job.def.name }, 'job stop failed');
    }
  }

  /** One timer for the earliest due job, capped so a clock jump is noticed within `maxSleepMs`. */
  private arm(): void {
    if (!this.started || this.stopped || !this.useTimer) return;
    let earliest = Infinity;
    for (const job of this.jobs.values()) {
      if (job.kicked && !job.running) earliest = -Infinity;
      else if (this.dueByTimer && job.nextAt !== null && job.nextAt < earliest) earliest = job.nextAt;
    }
    if (earliest === Infinity) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      this.armedAt = Infinity;
      return;
    }
    const now = this.clock.now();
    const delay = Math.max(0, Math.min(this.maxSleepMs, earliest - now));
    if (this.timer) clearTimeout(this.timer);
    this.armedAt = now + delay;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.armedAt = Infinity;
      this.tick();
    }, delay);
    // The scheduler never keeps the process alive on its own.
    this.timer.unref();
  }

  private tick(): void {
    const now = this.clock.now();
    for (const job of this.jobs.values()) this.dispatch(job, now, !this.dueByTimer);
    this.arm();
  }

  private handle(job: Job): JobHandle {
    return {
      name: job.def.name,
      kick: () => {
        if (job.gone || this.stopped) return;
        job.kicked ??= { at: null };
        this.arm();
      },
      nextAt: () => job.nextAt,
      lastAt: () => job.lastAt,
      reschedule: (schedule: Schedule) => {
        if (job.gone) return;
        checkSchedule(job.def.name, schedule);
        job.schedule = schedule;
        job.missed = 0;
        job.nextAt = firstSlot(schedule, this.clock.now());
        if (job.def.durable) this.persist(job);
        this.arm();
      },
      unregister: async () => {
        if (job.gone) return;
        job.gone = true;
        if (this.jobs.get(job.def.name) === job) this.jobs.delete(job.def.name);
        job.controller.abort();
        await job.running;
        await this.stopJob(job);
        if (job.def.durable) {
          job.write = job.write.then(() => this.slots!.remove(job.def.name));
          await job.write;
        }
        this.arm();
      },
    };
  }
}

function firstSlot(s: Schedule, now: number): number | null {
  if ('cron' in s) return nextSlot(s.cron, now);
  if ('everyMs' in s) return now + s.everyMs;
  return null;
}

function checkSchedule(name: string, s: Schedule): void {
  if ('cron' in s) {
    const check = validateUserCron(s.cron);
    if (!check.ok) throw new Error(`job ${name}: ${check.message}`);
  } else if ('everyMs' in s && !(Number.isFinite(s.everyMs) && s.everyMs > 0))
    throw new Error(`job ${name}: everyMs must be a positive number`);
}
