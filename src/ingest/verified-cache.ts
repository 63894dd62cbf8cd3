import type { Database, Key } from 'lmdb';

/**
 * Decoded records for the ingest hot path, never stale: every read fetches the stored bytes
 * (`getBinaryFast`, no decoding) and reuses the decoded value only when the bytes are identical.
 * A change or deletion is seen by the very next request; what is saved is the msgpack decoding.
 */
export class VerifiedCache {
  private readonly entries = new Map<string, { raw: Buffer; value: unknown }>();

  constructor(private readonly maxEntries = 10_000) {}

  /** The record at `key` of `db` (undefined when absent); `id` names the entry in this cache. */
  get<T>(db: Database<T, Key>, key: Key, id: string): T | undefined {
    const fast = db.getBinaryFast(key);
    if (fast === undefined) {
      this.entries.delete(id);
      return undefined;
    }
    // The fast buffer is a window on lmdb's shared read buffer: its `length` is the value's, its
    // byteLength the whole buffer's, so compare a view of exactly the value.
    const raw = fast.subarray(0, fast.length);
    const hit = this.entries.get(id);
    if (hit && hit.raw.equals(raw)) return hit.value as T;
    // getBinaryFast's buffer is reused by the next read: keep a copy of our own.
    const copy = db.getBinary(key);
    const value = db.get(key);
    if (value === undefined || copy === undefined) return undefined;
    if (!hit && this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(id, { raw: copy, value });
    return value;
  }
}
