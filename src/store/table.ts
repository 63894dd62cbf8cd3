import type { Database } from 'lmdb';
import type { Store } from './db.js';

/** Upper bound for a string key segment in ordered-binary order. */
const HIGH = '\uffff';

/**
 * Records of one kind, keyed `[scope, id]`: scope is the owner (team, project, …) so listing a
 * scope is one range read. Lookups by id alone go through `Index`.
 */
export class Table<T extends { id: string }> {
  readonly db: Database<T, [string, string]>;

  constructor(store: Store, name: string) {
    this.db = store.db<T, [string, string]>(name);
  }

  get(scope: string, id: string): T | undefined {
    return this.db.get([scope, id]);
  }

  /** Stage a write; call inside `store.transaction` for atomic read-modify-write. */
  put(scope: string, value: T): Promise<boolean> {
    return this.db.put([scope, value.id], value);
  }

  remove(scope: string, id: string): Promise<boolean> {
    return this.db.remove([scope, id]);
  }

  list(scope: string): T[] {
    const out: T[] = [];
    for (const { value } of this.db.getRange({ start: [scope, ''], end: [scope, HIGH] })) out.push(value);
    return out;
  }

  /** Every record of every scope; for background sweeps. */
  *all(): Iterable<{ scope: string; value: T }> {
    for (const { key, value } of this.db.getRange({})) yield { scope: key[0], value };
  }
}

/** A unique secondary key → string value (e.g. secret hash → key id, id → scope). */
export class Index {
  readonly db: Database<string, string>;

  constructor(store: Store, name: string) {
    this.db = store.db<string, string>(name);
  }

  get(key: string): string | undefined {
    return this.db.get(key);
  }

  put(key: string, value: string): Promise<boolean> {
    return this.db.put(key, value);
  }

  remove(key: string): Promise<boolean> {
    return this.db.remove(key);
  }
}
