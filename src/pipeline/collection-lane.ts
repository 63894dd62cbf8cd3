/**
 * Ordering of one collection's batches in flight (docs/architecture.md, "Ordering"). Several
 * batches of a collection run on workers at once, but each plans only after the batch before it
 * has planned, and commits only after it has committed — so the schema book decides exactly what a
 * sequential run would, and the spool is deleted in order.
 *
 * A batch that fails (or is found stale) ends the epoch of every batch behind it: each of those
 * aborts at its next turn (its work is thrown away, its lease given back), and the collection is
 * leased again only once they and the failed batch are all back, starting from the failed batch's
 * entries. The batches before it are untouched: they plan and commit as they would have, and a
 * failed batch whose plan was applied to the book ahead waits for them (`earlierDone`) before the
 * book is reloaded — reloading at once would make their plans stale too.
 */

/** A turn was refused: an earlier batch of the collection failed or went stale. */
export class LaneAborted extends Error {
  constructor(collectionId: string) {
    super(`an earlier batch of collection ${collectionId} did not commit; this one runs again`);
    this.name = 'LaneAborted';
  }
}

interface Gate {
  done: Promise<void>;
  open: () => void;
}

function gate(): Gate {
  let open!: () => void;
  const done = new Promise<void>((r) => (open = r));
  return { done, open };
}

/** One batch's place in its lane. */
export interface LaneSlot {
  /** The lane's epoch when the batch entered; a failure ahead of it moves it to an ended one. */
  epoch: number;
  /** The batch before it in the lane (cut once this one has left, so slots do not chain forever). */
  prev: LaneSlot | null;
  readonly planned: Gate;
  readonly committed: Gate;
  /** The plan was applied to the book ahead of the commit (a failure must then reload the book). */
  appliedAhead: boolean;
  /** The batch failed (`fail`) and is on its way out: the collection is not leased meanwhile. */
  failed: boolean;
}

export class CollectionLane {
  private epoch = 0;
  /** Batches in flight, in lane (spool) order. */
  private readonly slots = new Set<LaneSlot>();

  constructor(readonly collectionId: string) {}

  /** A new batch joins the lane behind the ones in flight. */
  enter(): LaneSlot {
    let tail: LaneSlot | null = null;
    for (const s of this.slots) tail = s;
    const slot: LaneSlot = {
      epoch: this.epoch,
      prev: tail,
      planned: gate(),
      committed: gate(),
      appliedAhead: false,
      failed: false,
    };
    this.slots.add(slot);
    return slot;
  }

  /** Resolves once every earlier batch has planned; throws LaneAborted if one of them failed. */
  async planTurn(slot: LaneSlot): Promise<void> {
    await slot.prev?.planned.done;
    this.check(slot);
  }

  /** Resolves once every earlier batch has committed; throws LaneAborted if one of them failed. */
  async commitTurn(slot: LaneSlot): Promise<void> {
    await slot.prev?.committed.done;
    this.check(slot);
  }

  /** Whether `slot` may still commit (no earlier batch failed since it entered). */
  live(slot: LaneSlot): boolean {
    return slot.epoch === this.epoch;
  }

  /** The batch planned: the next one may plan. */
  markPlanned(slot: LaneSlot): void {
    slot.planned.open();
  }

  /**
   * The batch committed: the next one may commit (before this one has left: what a batch does
   * after its commit, such as the schema detector, must not hold the commits behind it).
   */
  markCommitted(slot: LaneSlot): void {
    slot.committed.open();
  }

  /**
   * The batch will not commit (failed, stale or aborted). When it was still live, the epoch of
   * every batch behind it ends, so they abort; it and the batches before it stay live (an earlier
   * failure still ends it). Idempotent; `leave(slot, false)` calls it.
   */
  fail(slot: LaneSlot): void {
    if (slot.failed) return;
    slot.failed = true;
    if (slot.epoch !== this.epoch) return;
    // The batches behind it keep their (now ended) epoch; it, the ones before it and the ones to
    // come move to the new one.
    const ended = this.epoch++;
    let behind = false;
    for (const s of this.slots) {
      if (behind) continue;
      if (s.epoch === ended) s.epoch = this.epoch;
      if (s === slot) behind = true;
    }
  }

  /** Resolves once every earlier batch has committed or left (never refused). */
  async earlierDone(slot: LaneSlot): Promise<void> {
    await slot.prev?.committed.done;
  }

  /**
   * The batch is done. `ok` false: it failed (see `fail`). Gates open either way: waiters then
   * check their epoch.
   */
  leave(slot: LaneSlot, ok: boolean): void {
    if (!ok) this.fail(slot);
    slot.planned.open();
    slot.committed.open();
    slot.prev = null;
    this.slots.delete(slot);
  }

  /** Batches of the lane in flight. */
  get size(): number {
    return this.slots.size;
  }

  /**
   * Batches of an ended epoch, or a failed one, still in flight: the collection must not be leased
   * until they are back (a new batch would plan against a book about to be reloaded).
   */
  draining(): boolean {
    for (const s of this.slots) if (s.epoch !== this.epoch || s.failed) return true;
    return false;
  }

  private check(slot: LaneSlot): void {
    if (slot.epoch !== this.epoch) throw new LaneAborted(this.collectionId);
  }
}
