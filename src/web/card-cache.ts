/**
 * The cards a page answered lately, so that many viewers of one page (a public status page) cost
 * one aggregation per card, not one per viewer (docs/pages.md, "Points and pixels"). A key holds
 * everything the answer depends on: the metric and its definition (`definition_revision`, `updated_at`), where its final
 * data ends (`complete_through`: new data moves it), the query, and the minute it was asked in
 * (rolling windows move with the clock; within a minute their buckets are the same). So a cached
 * card is never older than a minute, and never older than the last data that became final.
 */
export class CardCache<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly max = 512) {}

  get(key: string): V | undefined {
    const v = this.entries.get(key);
    if (v === undefined) return undefined;
    // Most recently used last: the first entry is the one to evict.
    this.entries.delete(key);
    this.entries.set(key, v);
    return v;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The cache key of one card answer (see CardCache). */
export function cardKey(parts: {
  metricId: string;
  revision: number;
  updatedAt: string;
  completeThrough: number | null;
  now: number;
  query: unknown;
  customRange: unknown;
}): string {
  return [
    parts.metricId,
    parts.revision,
    parts.updatedAt,
    parts.completeThrough ?? '-',
    Math.floor(parts.now / 60_000),
    JSON.stringify(parts.query),
    JSON.stringify(parts.customRange ?? null),
  ].join('\u0000');
}
