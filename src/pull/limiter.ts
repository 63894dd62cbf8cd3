/** A counting semaphore: at most `max` tasks run at once, the rest wait in arrival order. */
export class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly max: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await task();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }

  /**
   * From inside `run`: give the caller's slot up while `task` runs (a wait that uses no network, such
   * as a check's retry delay), then take one again, behind the tasks already waiting. Without it a
   * minute with many down checks would hold every slot through their retry delays and start the
   * other runs late.
   */
  async outside<T>(task: () => Promise<T>): Promise<T> {
    this.active--;
    this.waiting.shift()?.();
    try {
      return await task();
    } finally {
      if (this.active >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
      this.active++;
    }
  }

  get inFlight(): number {
    return this.active;
  }
}
