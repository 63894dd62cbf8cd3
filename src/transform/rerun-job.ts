import type { Logger } from '../log.js';

/**
 * A background pass that runs one at a time: a request while it runs makes it run once more after
 * (never two at once, never a request lost). Used by the view backfill and script generation,
 * which both react to view changes.
 */
export class RerunJob {
  private running: Promise<void> | null = null;
  /** True from the first request until the loop has seen no request left (cleared in the same tick). */
  private active = false;
  private again = false;
  private stopped = false;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly log: Logger,
    /** Logged with a failed pass; the next request runs it again. */
    private readonly what: string,
  ) {}

  /** Run the pass now, or once more after the one running. */
  request(): void {
    if (this.stopped) return;
    this.again = true;
    if (this.active) return;
    this.active = true;
    this.running = this.loop();
  }

  /**
   * Passes while requests come. `active` is cleared in the same tick as the last look at `again`:
   * cleared later (in a `.finally` callback, a microtask after), a request landing in between would
   * see a loop still "running" that never looks again, and be lost.
   */
  private async loop(): Promise<void> {
    try {
      while (this.again && !this.stopped) {
        this.again = false;
        try {
          await this.pass();
        } catch (err) {
          this.log.error({ err }, `${this.what} failed; retried on the next change`);
        }
      }
    } finally {
      this.active = false;
    }
  }

  /** Resolves once no pass is running. */
  async idle(): Promise<void> {
    while (this.active) await this.running;
  }

  /** No more passes; resolves when the one running has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }
}

/**
 * A background service whose work is one `RerunJob` pass: kicked by the events it listens to (and at
 * start), idle for tests, stopped with its subscriptions. The view backfill, join processing, metric
 * backfill and late-data re-backfill are such services.
 */
export abstract class BackgroundPass {
  protected stopped = false;
  private readonly job: RerunJob;
  private readonly cleanups: Array<() => void> = [];

  constructor(log: Logger, what: string) {
    this.job = new RerunJob(() => this.runPass(), log, what);
  }

  /** One pass over whatever is due. */
  protected abstract runPass(): Promise<void>;

  /** Undo these (unsubscribe, clear a timer) when stopping. */
  protected onStop(...cleanups: Array<() => void>): void {
    this.cleanups.push(...cleanups);
  }

  /** Look for work now. */
  kick(): void {
    this.job.request();
  }

  /** Resolves once no pass is running (tests). */
  idle(): Promise<void> {
    return this.job.idle();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const c of this.cleanups.splice(0)) c();
    await this.job.stop();
  }
}
