import type { MetricSeriesRecord } from '../metric-records.js';
import { OTHER_SERIES, TOTAL_SERIES } from '../rollup-types.js';
import type { SeriesLookup } from '../series-cache.js';
import type { SeriesSet } from './window-series.js';

/** Spec: Aggregation series `details`. */
export interface SeriesDetails {
  label: string;
  hash: string;
  dimensions: Record<string, unknown>;
  color: string | null;
}

/** Which series an answer shows and what folds into `__other__`. */
export interface SeriesSelection {
  /** The series answered one by one, in answer order (pinned first, then by rank). */
  kept: SeriesDetails[];
  /** Whether series fold into `__other__` (the tail is not empty). */
  folds: boolean;
  /**
   * Real series with data in the window that fold into `__other__` (none: no `__other__`), sorted.
   * Listed when first read (only a merged `__other__` needs them): a metric may have 100,000.
   */
  readonly tail: string[];
  /** Spec `series_total`: distinct real series with data in the window, before folding. */
  seriesTotal: number;
}

export const OTHER_DETAILS: SeriesDetails = { label: 'Other', hash: OTHER_SERIES, dimensions: {}, color: null };

/** A series' label: its display label, else its dimension values joined by " / " (null shows as "(null)"). */
export function seriesLabel(s: Pick<MetricSeriesRecord, 'display_label' | 'dimensions'>): string {
  if (s.display_label) return s.display_label;
  const parts = Object.values(s.dimensions).map((v) =>
    v === null || v === undefined ? '(null)' : typeof v === 'string' ? v : JSON.stringify(v),
  );
  return parts.length ? parts.join(' / ') : '(all)';
}

function detailsOf(hash: string, registry: SeriesLookup): SeriesDetails {
  if (hash === OTHER_SERIES) return OTHER_DETAILS;
  const r = registry.get(hash);
  if (r === undefined) return { label: hash, hash, dimensions: {}, color: null }; // data seen before the registry caught up
  return { label: seriesLabel(r), hash, dimensions: r.dimensions, color: r.color };
}

export interface SelectionInput {
  /** The metric's name: the label of its one series when it has no group_by. */
  metricName: string;
  grouped: boolean;
  registry: SeriesLookup;
  /**
   * Real series with data in the window (never TOTAL_SERIES); OTHER_SERIES among them when series
   * past the metric's series limit were folded into it at ingest (series-limit.ts).
   */
  withData: SeriesSet;
  /** Whether the total pseudo-series has data in the window. */
  totalHasData: boolean;
  /** The `series` filter (registry hashes or TOTAL_SERIES), or null. */
  filter: readonly string[] | null;
  maxSeries: number;
  /** Keep every series with data (pinned first, then by rank): nothing folds, no `maxSeries`. Ignored with `filter`. */
  all?: boolean;
}

/**
 * Spec: with an explicit series filter exactly those series return; otherwise pinned series are kept
 * (pins replace ranking) and all others fold into `__other__`; with no pins the top `maxSeries`
 * series by `last_value` (highest first, no value last, then by hash) among those with data are kept.
 * A metric without group_by answers its total pseudo-series, labelled with the metric's name. The
 * stored `__other__` (series folded at ingest past the series limit) is never ranked: it is always
 * part of the tail (answered last with `all`), so the answer's `__other__` includes it.
 */
export function selectSeries(input: SelectionInput): SeriesSelection {
  const { registry, withData } = input;
  if (!input.grouped) {
    return {
      kept: [{ label: input.metricName, hash: TOTAL_SERIES, dimensions: {}, color: null }],
      folds: false,
      tail: [],
      seriesTotal: input.totalHasData ? 1 : 0,
    };
  }
  const seriesTotal = withData.size;
  if (input.filter !== null) {
    const kept = input.filter.map((h) =>
      h === TOTAL_SERIES ? { label: 'Total', hash: h, dimensions: {}, color: null } : detailsOf(h, registry),
    );
    return { kept, folds: false, tail: [], seriesTotal };
  }
  const pinned = registry.pinned().map((s) => s.hash);
  const folded = withData.has(OTHER_SERIES);
  if (input.all === true) {
    const keptHashes = [
      ...pinned,
      ...rankAll(withData, registry, new Set([...pinned, OTHER_SERIES])),
      ...(folded ? [OTHER_SERIES] : []),
    ];
    return { kept: keptHashes.map((h) => detailsOf(h, registry)), folds: false, tail: [], seriesTotal };
  }
  const keptHashes =
    pinned.length > 0
      ? pinned
      : (topByRankWalk(withData, registry, input.maxSeries) ??
        topByLastValue(folded ? withoutOther(withData) : withData, registry, input.maxSeries));
  // Every series with data folds but the kept ones (pins may have no data in the window).
  let keptWithData = 0;
  for (const h of keptHashes) if (withData.has(h)) keptWithData++;
  let tail: string[] | null = null;
  return {
    kept: keptHashes.map((h) => detailsOf(h, registry)),
    folds: seriesTotal > keptWithData,
    get tail() {
      return (tail ??= sortedTail(withData, new Set(keptHashes)));
    },
    seriesTotal,
  };
}

/** Longest walk down the ranked registry, as a multiple of the series with data, before a pass over them is cheaper. */
const WALK_PER_SERIES = 4;

/**
 * `topByLastValue` from the registry's ranked order (SeriesLookup.ranked): its series with a value,
 * best first, each kept when it has data in the window, until `n` are. Its cost grows with the
 * series walked — about `n` when the best-ranked series have data, as they do in a window ending now —
 * not with every series in the window. Null when that cannot give the same answer: the registry keeps
 * no ranked order, fewer than `n` series with a value have data (series without one, or not
 * registered yet, rank by hash among themselves: only the full pass sees them all), or the walk
 * grows past a few times the series with data.
 */
function topByRankWalk(withData: SeriesSet, registry: SeriesLookup, n: number): string[] | null {
  if (registry.ranked === undefined) return null;
  const ranked = registry.ranked();
  const most = WALK_PER_SERIES * withData.size + 64;
  const top: string[] = [];
  for (let i = 0; i < ranked.length && i < most; i++) {
    const r = ranked[i]!;
    if (r.last_value === null) return null;
    if (withData.has(r.hash) && top.push(r.hash) === n) return top;
  }
  return null;
}

function* withoutOther(hashes: Iterable<string>): Iterable<string> {
  for (const h of hashes) if (h !== OTHER_SERIES) yield h;
}

/**
 * The series of `withData` not kept, sorted (the merged tail's cache key digests them in order).
 * Sorting 100,000 hashes costs ~50 ms; a scan that lists them in order (SQL `ORDER BY`) skips it.
 */
function sortedTail(withData: SeriesSet, kept: ReadonlySet<string>): string[] {
  const tail: string[] = [];
  let ordered = true;
  for (const h of withData) {
    if (kept.has(h)) continue;
    if (ordered && tail.length > 0 && tail[tail.length - 1]! > h) ordered = false;
    tail.push(h);
  }
  return ordered ? tail : tail.sort();
}

/** Every hash of `withData` not in `skip`, ranked as topByLastValue ranks (a sort: every one is kept). */
function rankAll(withData: SeriesSet, registry: SeriesLookup, skip: ReadonlySet<string>): string[] {
  const ranked = [...withData]
    .filter((h) => !skip.has(h))
    .map((h) => ({ h, v: registry.get(h)?.last_value ?? -Infinity }));
  ranked.sort((a, b) => (b.v === a.v ? 0 : b.v > a.v ? 1 : -1) || (a.h < b.h ? -1 : a.h > b.h ? 1 : 0));
  return ranked.map((e) => e.h);
}

/**
 * The first `n` of `hashes` ranked by `last_value` (highest first, none last, then by hash): one pass
 * keeping the best `n` (n ≤ 50), not a sort of every series — a metric may have 100,000.
 */
function topByLastValue(hashes: Iterable<string>, registry: SeriesLookup, n: number): string[] {
  const value = (h: string): number => registry.get(h)?.last_value ?? -Infinity;
  const before = (a: { h: string; v: number }, b: { h: string; v: number }): boolean =>
    (b.v - a.v || (a.h < b.h ? -1 : a.h > b.h ? 1 : 0)) < 0;
  const top: Array<{ h: string; v: number }> = [];
  for (const h of hashes) {
    const v = value(h);
    // Most series rank below the current n-th: rejected without allocating.
    if (top.length === n) {
      const last = top[n - 1]!;
      if (!(v > last.v || (v === last.v && h < last.h))) continue;
    }
    const e = { h, v };
    let i = top.length;
    while (i > 0 && before(e, top[i - 1]!)) i--;
    top.splice(i, 0, e);
    if (top.length > n) top.pop();
  }
  return top.map((e) => e.h);
}
