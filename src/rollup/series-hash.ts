import { hashValue } from './hll.js';

/**
 * The stable opaque hash of a series: xxHash64 of the JSON array of its group_by values in group_by
 * order (strings, numbers, booleans, dates as epoch ms, null), as 16 hex digits. The same values give
 * the same hash in every batch, after restarts and in backfills; "1" and 1 differ. Needs
 * `loadHasher()` once per thread.
 */
export function seriesHash(values: readonly unknown[]): string {
  return hashValue(JSON.stringify(values)).toString(16).padStart(16, '0');
}
