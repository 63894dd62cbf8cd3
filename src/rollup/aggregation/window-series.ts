import { TOTAL_SERIES } from '../rollup-types.js';

/** Series hashes with data in a window, as series selection reads them (a ReadonlySet fits). */
export interface SeriesSet extends Iterable<string> {
  readonly size: number;
  has(hash: string): boolean;
}

/** A scan's hashes as a set without TOTAL_SERIES, and whether the total had data. */
interface ScanSet {
  set: Set<string>;
  total: boolean;
}

/**
 * Sets of kept scans (sealed-cells.ts keeps the arrays): made once per kept array, so an answer
 * whose window's sealed part was scanned before hashes none of its series again (hashing 20,000
 * fresh strings into a set was ~4 ms an answer).
 */
const setsOfKept = new WeakMap<readonly string[], ScanSet>();

function scanSet(found: readonly string[]): ScanSet {
  const set = new Set(found);
  const total = set.delete(TOTAL_SERIES);
  return { set, total };
}

/**
 * The real series with data in a window (never TOTAL_SERIES, which `total` says): the union of the
 * part over its sealed buckets (a kept scan: its set is made once and shared) and the part after them
 * (a few minutes: few series), without copying the first into a new set.
 */
export class WindowSeries implements SeriesSet {
  /** Whether the total pseudo-series has data in the window. */
  readonly total: boolean;
  readonly size: number;
  private readonly head: ReadonlySet<string>;
  /** Series of the later part not in `head`. */
  private readonly extra: ReadonlySet<string>;

  private constructor(head: ScanSet, rest: readonly string[]) {
    this.head = head.set;
    const extra = new Set<string>();
    let total = head.total;
    for (const h of rest) {
      if (h === TOTAL_SERIES) total = true;
      else if (!head.set.has(h)) extra.add(h);
    }
    this.extra = extra;
    this.total = total;
    this.size = head.set.size + extra.size;
  }

  /** One scan's hashes (TOTAL_SERIES among them when the total has data). */
  static of(found: readonly string[]): WindowSeries {
    return new WindowSeries(scanSet(found), []);
  }

  /** A kept scan of the sealed part (its set shared between answers) and a fresh scan of the rest. */
  static joined(kept: readonly string[], rest: readonly string[]): WindowSeries {
    let head = setsOfKept.get(kept);
    if (head === undefined) setsOfKept.set(kept, (head = scanSet(kept)));
    return new WindowSeries(head, rest);
  }

  has(hash: string): boolean {
    return this.head.has(hash) || this.extra.has(hash);
  }

  *[Symbol.iterator](): Iterator<string> {
    yield* this.head;
    yield* this.extra;
  }
}
