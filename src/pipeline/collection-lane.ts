/**
 * Ordering of one collection's batches in flight (docs/architecture.md, "Ordering"). Several
 * batches of a collection run on workers at once, but each plans only after the batch before it
 * has planned, and commits only after it has committed — so the schema book decides exactly what a
 * sequential run would, and the spool is deleted in order.
 *
 * A batch that fails (or is found stale) ends its lane's epoch: every later batch of the lane then
 * aborts at its next turn (its work is thrown away, its lease given back), and the collection is
 * leased again only once the lane has drained, starting from the failed batch's entries.
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
  readonly epoch: number;
  readonly prev: LaneSlot | null;
  readonly planned: Gate;
  readonly committed: Gate;
  /** The plan was applied to the book ahead of the commit (a failure must then reload the book). */
  appliedAhead: boolean;
}

export class CollectionLane {
  private epoch = 0;
  private tail: LaneSlot | null = null;
  private readonly slots = new Set<LaneSlot>();

  constructor(readonly collectionId: string) {}

  /** A new batch joins the lane behind the ones in flight. */
  enter(): LaneSlot {
    const slot: LaneSlot = { epoch: this.epoch, prev: this.tail, planned: gate(), committed: gate(), appliedAhead: false };
    this.tail = slot;
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
   * The batch is done. `ok` false (failed, stale or aborted) ends the epoch when the slot was
   * still live, so every later batch aborts. Gates open either way: waiters then check the epoch.
   */
  leave(slot: LaneSlot, ok: boolean): void {
    if (!ok && slot.epoch === this.epoch) this.epoch++;
    slot.planned.open();
    slot.committed.open();
    this.slots.delete(slot);
    if (this.tail === slot) this.tail = null;
  }

  /** Batches of the lane in flight. */
  get size(): number {
    return this.slots.size;
  }

  /** Batches of an ended epoch still in flight: the collection must not be leased until they are back. */
  draining(): boolean {
    for (const s of this.slots) if (s.epoch !== this.epoch) return true;
    return false;
  }

  private check(slot: LaneSlot): void {
    if (slot.epoch !== this.epoch) throw new LaneAborted(this.collectionId);
  }
}
