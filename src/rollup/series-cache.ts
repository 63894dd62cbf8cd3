import type { MetricSeriesRecord } from './metric-records.js';

/** What the aggregation reads of a metric's series registry (series-selection.ts). */
export interface SeriesLookup {
  /** How many series are registered. */
  readonly size: number;
  get(hash: string): MetricSeriesRecord | undefined;
  hashes(): Iterable<string>;
  /** Pinned series in pin order (oldest pin first, then by hash). */
  pinned(): readonly MetricSeriesRecord[];
}

/** Orders the series listing sorts by (GET .../series). */
export type SeriesListField = 'first_seen_at' | 'last_value';

/**
 * One metric's series in memory, keyed by hash. Pins and listing orders are kept beside it so a
 * request costs O(answer), not O(series): a metric may have 100,000 series.
 */
export class MetricSeriesView implements SeriesLookup {
  private readonly byHash = new Map<string, MetricSeriesRecord>();
  /** Hashes in registration order (new series are appended; the registry never removes one). */
  private readonly registered: string[] = [];
  private readonly pins = new Map<string, MetricSeriesRecord>();
  private pinOrder: MetricSeriesRecord[] | null = null;
  /** Last listing order per field (hashes) and how many of `registered` it holds. */
  private readonly orders = new Map<SeriesListField, { hashes: string[]; known: number }>();

  constructor(readonly revision: number, records: readonly MetricSeriesRecord[]) {
    for (const r of records) this.put(r);
  }

  get size(): number {
    return this.byHash.size;
  }

  get(hash: string): MetricSeriesRecord | undefined {
    return this.byHash.get(hash);
  }

  hashes(): Iterable<string> {
    return this.byHash.keys();
  }

  pinned(): readonly MetricSeriesRecord[] {
    this.pinOrder ??= [...this.pins.values()].sort((a, b) => a.pinned_at!.localeCompare(b.pinned_at!) || (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
    return this.pinOrder;
  }

  /** Apply a committed write of one series. */
  put(r: MetricSeriesRecord): void {
    const cur = this.byHash.get(r.hash);
    if (cur === undefined) this.registered.push(r.hash);
    this.byHash.set(r.hash, r);
    if (r.pinned_at !== null || cur?.pinned_at != null) {
      if (r.pinned_at !== null) this.pins.set(r.hash, r);
      else this.pins.delete(r.hash);
      this.pinOrder = null;
    }
  }

  /**
   * Every series sorted ascending by `field` then id (the listing's keyset order). The order of the
   * previous call is sorted again with current values: it is nearly sorted, which the engine's merge
   * sort finishes in about one pass instead of a full sort of 100,000 records per page.
   */
  sortedBy(field: SeriesListField): MetricSeriesRecord[] {
    const prev = this.orders.get(field) ?? { hashes: [], known: 0 };
    const records = prev.hashes.map((h) => this.byHash.get(h)!);
    for (let i = prev.known; i < this.registered.length; i++) records.push(this.byHash.get(this.registered[i]!)!);
    records.sort(field === 'first_seen_at' ? byFirstSeen : byLastValue);
    this.orders.set(field, { hashes: records.map((r) => r.hash), known: this.registered.length });
    return records;
  }
}

const byId = (a: MetricSeriesRecord, b: MetricSeriesRecord): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byFirstSeen = (a: MetricSeriesRecord, b: MetricSeriesRecord): number => (a.first_seen_at < b.first_seen_at ? -1 : a.first_seen_at > b.first_seen_at ? 1 : byId(a, b));
/** Null (no value yet) first, as the listing's value comparison orders it. */
const byLastValue = (a: MetricSeriesRecord, b: MetricSeriesRecord): number => {
  if (a.last_value === b.last_value) return byId(a, b);
  if (a.last_value === null) return -1;
  if (b.last_value === null) return 1;
  return a.last_value - b.last_value;
};

/** How many series the cache holds at most across metrics before it drops the least recently used. */
export const DEFAULT_CACHED_SERIES = 1_000_000;

/**
 * The series registry of every metric as an in-memory view derived from LMDB (which stays the truth):
 * a metric's series are loaded on first use, then kept current by the writes that commit
 * (MetricStore applies each staged series write once its transaction has committed). A metric's view
 * is dropped when the metric is removed or rebuilt, and the least recently used metrics are dropped
 * when more than `limit` series are held; a dropped view is loaded again on its next use.
 */
export class SeriesCache {
  /** In least-recently-used-first order (a use moves a metric to the end). */
  private readonly views = new Map<string, MetricSeriesView>();
  private held = 0;

  constructor(private readonly load: (metricId: string) => MetricSeriesRecord[], private readonly limit = DEFAULT_CACHED_SERIES) {}

  /** The series of a metric at `revision` (a view loaded under another revision is loaded again). */
  of(metricId: string, revision: number): MetricSeriesView {
    let view = this.views.get(metricId);
    if (view !== undefined && view.revision !== revision) {
      this.drop(metricId);
      view = undefined;
    }
    if (view === undefined) {
      view = new MetricSeriesView(revision, this.load(metricId));
      this.held += view.size;
    } else {
      this.views.delete(metricId);
    }
    this.views.set(metricId, view);
    this.evict(metricId);
    return view;
  }

  /** Whether a metric's series are held (tests, diagnostics). */
  holds(metricId: string): boolean {
    return this.views.has(metricId);
  }

  /** A series write has committed. */
  committed(r: MetricSeriesRecord): void {
    const view = this.views.get(r.metric_id);
    if (view === undefined) return;
    const before = view.size;
    view.put(r);
    this.held += view.size - before;
  }

  /** A metric's definition has committed: a rebuild (new revision) drops its view. */
  revised(metricId: string, revision: number): void {
    if (this.views.get(metricId)?.revision !== revision) this.drop(metricId);
  }

  drop(metricId: string): void {
    const view = this.views.get(metricId);
    if (view === undefined) return;
    this.held -= view.size;
    this.views.delete(metricId);
  }

  private evict(keep: string): void {
    for (const id of this.views.keys()) {
      if (this.held <= this.limit) return;
      if (id !== keep) this.drop(id);
    }
  }
}
