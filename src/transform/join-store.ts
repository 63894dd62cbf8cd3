import type { Database } from 'lmdb';
import type { Store } from '../store/db.js';
import { isLater, type RowPlace } from './join-key.js';

/** The lookup record kept for one key of one join clause: the latest by event time. */
export interface LookupEntry extends RowPlace {
  /** The lookup view's output row (docs/views.md, "Records" form). */
  record: Record<string, unknown>;
}

/** Done marks of a join view's base files sit under this scope; lookup files under the clause alias. */
export const BASE_SCOPE = '#base';

const HIGH = '\uffff';

/**
 * LMDB storage of join views' processing (docs/views.md, "Join views"): per clause an index from
 * join key to the latest lookup record — kept from the lookup view's committed files, so a base
 * record's match is one read, never a scan — and per input file a done mark, so each file is
 * indexed or joined exactly once across restarts. Writes (`stage*`) run inside
 * `store.transaction`, with the output they go with.
 */
export class JoinStore {
  /** [join view id, alias, key] → latest lookup entry */
  private readonly index: Database<LookupEntry, [string, string, string]>;
  /** [join view id, alias or BASE_SCOPE, file id] → true */
  private readonly done: Database<true, [string, string, string]>;

  constructor(store: Store) {
    this.index = store.db<LookupEntry, [string, string, string]>('view_join_index');
    this.done = store.db<true, [string, string, string]>('view_join_done');
  }

  lookup(viewId: string, alias: string, key: string): LookupEntry | undefined {
    return this.index.get([viewId, alias, key]);
  }

  /** Stage `entry` for `key` unless the index holds a later one. */
  stageLatest(viewId: string, alias: string, key: string, entry: LookupEntry): void {
    const cur = this.index.get([viewId, alias, key]);
    if (cur === undefined || isLater(entry, cur)) void this.index.put([viewId, alias, key], entry);
  }

  isDone(viewId: string, scope: string, fileId: string): boolean {
    return this.done.get([viewId, scope, fileId]) === true;
  }

  stageDone(viewId: string, scope: string, fileId: string): void {
    void this.done.put([viewId, scope, fileId], true);
  }

  /** Ids of the files of `scope` marked done. */
  doneFiles(viewId: string, scope: string): Set<string> {
    const out = new Set<string>();
    for (const key of this.done.getKeys({ start: [viewId, scope, ''], end: [viewId, scope, HIGH] })) out.add(key[2]);
    return out;
  }

  /** Forget which base files were joined (the join starts over); lookup indexes stay valid. */
  stageClearBase(viewId: string): void {
    for (const id of this.doneFiles(viewId, BASE_SCOPE)) void this.done.remove([viewId, BASE_SCOPE, id]);
  }

  /** Stage the removal of everything kept for a join view. */
  stageRemoval(viewId: string): void {
    for (const db of [this.index, this.done] as Database<unknown, [string, string, string]>[]) {
      // Keys read out before removing: no cursor stays open over what the transaction changes.
      const keys = [...db.getKeys({ start: [viewId, '', ''], end: [viewId, HIGH, HIGH] })];
      for (const key of keys) void db.remove(key);
    }
  }
}
