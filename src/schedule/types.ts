/**
 * The scheduler's contract (docs/architecture.md, "Scheduler"). Every periodic or kicked job in the
 * node registers here; the implementation lives beside this file and is driven by the injected Clock.
 */

/** When a job runs: a five-field UTC cron (one slot per minute at most), a fixed period, or only when kicked. */
export type Schedule = { cron: string } | { everyMs: number } | { kick: true };

/** What a durable job does with slots that passed while the node was down (or the job was stalled). */
export type MissedPolicy =
  /** Count them (reported in `SlotRun.missed`), never run them late: pulls and checks. */
  | 'count'
  /** Count them and run the latest one once, at start, with `at` = that slot: monitors. */
  | 'run_latest';

/** One run of a job. */
export interface SlotRun {
  /** The scheduled time of this slot (epoch ms); for `everyMs`/`kick` jobs, when the run started. */
  at: number;
  /**
   * Slots of this job that passed without a run since its last one: for durable jobs across restarts,
   * for other cron jobs while the node runs; 0 for `everyMs` and `kick` jobs.
   */
  missed: number;
  /** Aborted when the job is unregistered or the scheduler stops. */
  signal: AbortSignal;
}

export interface JobDef {
  /** Unique within the node, e.g. `compaction`, `monitor:mon_…`, `pull:pul_…`. */
  name: string;
  schedule: Schedule;
  /** Keep `next_at`/`last_at` in LMDB so a restart neither skips nor doubles a slot. */
  durable?: boolean;
  /** Durable jobs only; default `count`. */
  missed?: MissedPolicy;
  /** A run never overlaps the previous run of the same job; a slot due while one runs is counted as missed. */
  run(slot: SlotRun): Promise<void> | void;
  /** Called once when the job is unregistered or the scheduler stops, after the run in flight. */
  stop?(): Promise<void> | void;
}

export interface JobHandle {
  readonly name: string;
  /** Run as soon as possible (kick jobs; a no-op while a run is in flight except to run once more after it). */
  kick(): void;
  /** The next slot (epoch ms), or null for kick-only jobs. */
  nextAt(): number | null;
  /** The last slot run (epoch ms), or null. */
  lastAt(): number | null;
  /** Change the schedule (a cron edit): the next slot is computed from now; missed counting restarts. */
  reschedule(schedule: Schedule): void;
  /** Stop the job (waits for its run in flight); a durable job's stored slot is removed. */
  unregister(): Promise<void>;
}

export interface Scheduler {
  register(job: JobDef): JobHandle;
  get(name: string): JobHandle | undefined;
}
