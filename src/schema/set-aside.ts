import type { Clock } from '../clock.js';
import { notFound } from '../errors.js';
import type { Spool } from '../spool/spool.js';
import type { Table } from '../store/table.js';
import type { UnprocessableEntry } from './schema-store.js';

/**
 * Spool entries the pipeline could not process however it retried them (docs/architecture.md,
 * "Failures"), kept in LMDB `pipeline_unprocessable` with their body and last error so the
 * collection's later records flow: set aside, listed, and put back in the spool on request.
 */
export class SetAside {
  /** Entries being put back in the spool right now (`collection:seq`). */
  private readonly retrying = new Set<string>();

  constructor(
    private readonly table: Table<UnprocessableEntry>,
    private readonly clock: Clock,
  ) {}

  /**
   * Stage setting a spool entry aside (inside the spool's completion transaction, so the entry
   * leaves the spool exactly when its copy is stored).
   */
  stage(entry: Omit<UnprocessableEntry, 'id' | 'set_aside_at'>): void {
    void this.table.put(entry.collection_id, {
      ...entry,
      id: String(entry.seq),
      set_aside_at: new Date(this.clock.now()).toISOString(),
    });
  }

  /**
   * Put a set-aside entry back in the spool (a new sequence number; its body, receive time and
   * format as they were), removing it from the list in the same transaction. Returns the new
   * sequence number; not_found when the entry is gone or another retry is putting it back.
   */
  async retry(e: UnprocessableEntry, spool: Spool): Promise<number> {
    // Claimed synchronously: a second retry arriving before the first one's commit finds it taken.
    const claim = `${e.collection_id}:${e.id}`;
    if (this.retrying.has(claim) || !this.table.get(e.collection_id, e.id))
      throw notFound(`Set-aside entry ${e.seq} of collection ${e.collection_id}`);
    this.retrying.add(claim);
    try {
      return await spool.append(
        {
          collection_id: e.collection_id,
          project_id: e.project_id,
          received_at: e.received_at,
          records: e.records,
          format: e.format,
          body: e.body,
        },
        () => {
          void this.table.remove(e.collection_id, e.id);
        },
      );
    } finally {
      this.retrying.delete(claim);
    }
  }

  /** A collection's set-aside entries, in sequence order. */
  list(collectionId: string): UnprocessableEntry[] {
    return this.table.list(collectionId).sort((a, b) => a.seq - b.seq);
  }
}
