import { bucketStart, nextBucketStart, TIERS, type Tier } from '../rollup-types.js';

/** Stored rows of one tier with `from <= start < to`: one RollupReader.read. */
export interface Tile {
  tier: Tier;
  from: number;
  to: number;
}

/** Shortest bucket of each tier (a month is at least 28 days). */
const SHORTEST_MS: Record<Tier, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000, month: 28 * 86_400_000 };

/** Tiers coarsest first, the minute tier excluded (it is the fallback that tiles anything). */
const COARSE_FIRST: readonly Tier[] = [...TIERS].reverse().filter((t) => t !== 'minute');

/**
 * The fewest stored rows whose buckets exactly tile `[a, b)` (minute boundaries): the coarsest tier
 * with whole buckets inside takes the middle, finer tiers the two edges. A UTC day is one day row, a
 * Europe/Berlin day 24 hour rows, an Asia/Kolkata hour 60 minute rows, a Berlin month its whole UTC
 * days plus two edges of hours.
 */
export function coverRange(a: number, b: number, tiers: readonly Tier[] = COARSE_FIRST): Tile[] {
  if (a >= b) return [];
  for (let k = 0; k < tiers.length; k++) {
    const tier = tiers[k]!;
    if (b - a < SHORTEST_MS[tier]) continue; // no whole bucket of it fits (most answer buckets: cheap)
    const first = bucketStart(tier, a) === a ? a : nextBucketStart(tier, bucketStart(tier, a));
    const last = bucketStart(tier, b);
    if (first < last) {
      const finer = tiers.slice(k + 1);
      return [...coverRange(a, first, finer), { tier, from: first, to: last }, ...coverRange(last, b, finer)];
    }
  }
  return [{ tier: 'minute', from: a, to: b }];
}

/**
 * Tiles for one answer bucket `[a, b)` given the watermark: before `completeThrough` every tier is
 * final and may be used; after it only minute rows are (coarser rows there are still being built),
 * and with no watermark everything is read from minutes.
 */
export function tileBucket(a: number, b: number, completeThrough: number | null): Tile[] {
  if (completeThrough === null || a >= completeThrough) return [{ tier: 'minute', from: a, to: b }];
  if (b <= completeThrough) return coverRange(a, b);
  return [...coverRange(a, completeThrough), { tier: 'minute', from: completeThrough, to: b }];
}

/** True when the tiles are one stored row: its precomputed figures are the bucket's answer. */
export function isSingleRow(tiles: readonly Tile[]): boolean {
  return tiles.length === 1 && nextBucketStart(tiles[0]!.tier, tiles[0]!.from) === tiles[0]!.to;
}

/** A read of the plan: a tile span, and whether its rows' sketches must be decoded. */
export interface ReadSpan extends Tile {
  sketches: boolean;
}

/** Joins adjacent tiles of one tier and sketch need, so a plan makes few reads. */
export function coalesce(spans: readonly ReadSpan[]): ReadSpan[] {
  // Grouped by (tier, sketches) first: an answer of 1,440 minute buckets sorts a few spans, not 1,440.
  const groups = new Map<string, ReadSpan[]>();
  for (const s of spans) {
    const key = `${s.tier}:${s.sketches ? 1 : 0}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(s);
  }
  const out: ReadSpan[] = [];
  for (const g of groups.values()) {
    let ordered = true;
    for (let i = 1; i < g.length && ordered; i++) if (g[i - 1]!.from > g[i]!.from) ordered = false;
    const sorted = ordered ? g : [...g].sort((x, y) => x.from - y.from);
    let prev: ReadSpan | null = null;
    for (const s of sorted) {
      if (prev && prev.to === s.from) prev.to = s.to;
      else out.push((prev = { tier: s.tier, from: s.from, to: s.to, sketches: s.sketches }));
    }
  }
  return out.sort(
    (x, y) =>
      (x.tier < y.tier ? -1 : x.tier > y.tier ? 1 : 0) || Number(x.sketches) - Number(y.sketches) || x.from - y.from,
  );
}
