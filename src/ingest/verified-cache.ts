import * as lmdb from 'lmdb';
import type { Database, Key } from 'lmdb';

/** lmdb's ordered-binary key encoder (exported at runtime, missing from its typings). */
const encodeKey = (lmdb as unknown as { keyValueToBuffer(key: Key): Buffer }).keyValueToBuffer;

/**
 * Decoded records for the ingest hot path, never stale: every read fetches the stored bytes
 * (`getBinaryFast`, no decoding) and reuses the decoded value only when the bytes are identical.
 * A change or deletion is seen by the very next request; what is saved is the msgpack decoding
 * (and, after the first read, the key encoding: a Buffer key is copied to lmdb as is).
 */
export class VerifiedCache {
  private readonly entries = new Map<string, { key: Buffer; raw: Buffer; value: unknown }>();

  constructor(private readonly maxEntries = 10_000) {}

  /** The record at `key` of `db` (undefined when absent); `id` names the entry in this cache. */
  get<T>(db: Database<T, Key>, key: Key, id: string): T | undefined {
    const hit = this.entries.get(id);
    const fast = db.getBinaryFast(hit ? hit.key : key);
    if (fast === undefined) {
      if (hit) this.entries.delete(id);
      return undefined;
    }
    // The fast buffer is a window on lmdb's shared read buffer: its `length` is the value's, its
    // byteLength the whole buffer's, so compare a view of exactly the value.
    const raw = fast.subarray(0, fast.length);
    if (hit && hit.raw.equals(raw)) return hit.value as T;
    // getBinaryFast's buffer is reused by the next read: keep a copy of our own.
    const copy = db.getBinary(key);
    const value = db.get(key);
    if (value === undefined || copy === undefined) return undefined;
    if (!hit && this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(id, { key: hit ? hit.key : encodeKey(key), raw: copy, value });
    return value;
  }
}
