import type { Logger } from '../log.js';

/** A part of the node that starts and stops with it (a store, a background loop, the scheduler, the listener). */
export interface Participant {
  name: string;
  /** Omitted for parts that are ready once built (a store opened by its constructor). */
  start?(): Promise<void> | void;
  /** Omitted for parts with nothing to release. */
  stop?(): Promise<void> | void;
}

/**
 * The node's participants in one ordered list (fastify's onReady/onClose is the model): `start` starts
 * those added since the last `start`, in order; `stop` stops every started one in reverse order. A
 * failing stop is logged and the rest still stop, so a shutdown always reaches the store.
 */
export class Lifecycle {
  private readonly list: Participant[] = [];
  private startedCount = 0;
  private stopping: Promise<void> | null = null;

  constructor(private readonly log: Logger) {}

  /** Append a participant; it starts at the next `start` and stops before every participant added earlier. */
  add(participant: Participant): void {
    if (this.stopping) throw new Error(`lifecycle is stopping; cannot add ${participant.name}`);
    this.list.push(participant);
  }

  /** Start the participants added since the last call, in order; a start that throws stops the call (and throws). */
  async start(): Promise<void> {
    while (this.startedCount < this.list.length) {
      const p = this.list[this.startedCount]!;
      await p.start?.();
      this.startedCount++;
    }
  }

  /** The names, in start order. */
  names(): string[] {
    return this.list.map((p) => p.name);
  }

  /** Stop every started participant in reverse order; resolves once all have stopped (or failed, logged). */
  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    for (let i = this.startedCount - 1; i >= 0; i--) {
      const p = this.list[i]!;
      try {
        await p.stop?.();
      } catch (err) {
        this.log.error({ err, participant: p.name }, 'stop failed; stopping the rest');
      }
    }
  }
}
