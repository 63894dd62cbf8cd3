import type { Store } from './db.js';
import { Index, Table } from './table.js';

/**
 * A `Table` whose records can also be found by id alone: an id → scope index kept beside it, in the
 * same transaction. The trio every catalogue store needs — `get(scope, id)`, `byId(id)`,
 * `list(scope)` — written once (ingest and background jobs know a record's id, not its owner).
 *
 * `put` and `remove` stage both writes; call them inside `store.transaction` so the record and its
 * index entry commit together (outside one they are two separate writes).
 */
export class ScopedTable<T extends { id: string }> extends Table<T> {
  /** id → scope */
  readonly scopeOf: Index;

  constructor(store: Store, name: string, indexName: string) {
    super(store, name);
    this.scopeOf = new Index(store, indexName);
  }

  /** The record with this id in whatever scope holds it, or undefined. */
  byId(id: string): T | undefined {
    const scope = this.scopeOf.get(id);
    return scope === undefined ? undefined : this.get(scope, id);
  }

  /** Stage the record under `scope` and its id → scope entry. */
  override put(scope: string, value: T): Promise<boolean> {
    void this.scopeOf.put(value.id, scope);
    return super.put(scope, value);
  }

  /** Stage the removal of the record and of its id → scope entry. */
  override remove(scope: string, id: string): Promise<boolean> {
    void this.scopeOf.remove(id);
    return super.remove(scope, id);
  }
}

/**
 * A unique secondary key (a secret's or token's hash) → the `scope/id` of one record of a `Table`,
 * so a record is found by it in two reads. The ref is stored as the text `scope/id`.
 */
export class RefIndex extends Index {
  /** Stage `key` → `scope/id`. */
  putRef(key: string, scope: string, id: string): Promise<boolean> {
    return this.put(key, `${scope}/${id}`);
  }

  /** The record of `table` that `key` refers to, or undefined (unknown key, or the record is gone). */
  find<T extends { id: string }>(table: Table<T>, key: string): T | undefined {
    const ref = this.get(key);
    if (!ref) return undefined;
    const slash = ref.indexOf('/');
    if (slash < 0) return undefined;
    return table.get(ref.slice(0, slash), ref.slice(slash + 1));
  }
}
