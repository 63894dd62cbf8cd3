import type { MetricSeriesRecord } from './metric-records.js';

/** What the aggregation reads of a metric's series registry (series-selection.ts). */
export interface SeriesLookup {
  /** How many series are registered. */
  readonly size: number;
  get(hash: string): MetricSeriesRecord | undefined;
  hashes(): Iterable<string>;
  /** Pinned series in pin order (oldest pin first, then by hash). */
  pinned(): readonly MetricSeriesRecord[];
  /**
   * Every series in ranking order — `last_value` highest first, none last, then by hash — current
   * with every write applied (series-selection.ts walks it). Optional: without it ranking passes over
   * every series with data.
   */
  ranked?(): readonly MetricSeriesRecord[];
}

/** Orders the series listing sorts by (GET .../series). */
export type SeriesListField = 'first_seen_at' | 'last_value';

/** A series' current record: orders hold entries, so a write replaces the record without a lookup. */
interface Entry {
  rec: MetricSeriesRecord;
}

/**
 * One metric's series in memory, keyed by hash. Pins and listing orders are kept beside it so a
 * request costs O(answer), not O(series): a metric may have 100,000 series.
 */
export class MetricSeriesView implements SeriesLookup {
  private readonly byHash = new Map<string, Entry>();
  /** Entries in registration order (new series are appended; the registry never removes one). */
  private readonly registered: Entry[] = [];
  private readonly pins = new Map<string, MetricSeriesRecord>();
  private pinOrder: MetricSeriesRecord[] | null = null;
  /** Writes that moved a series in the `last_value` order. */
  private lastValueChanges = 0;
  /** Each listing order as last sorted, how many registered entries it holds, and the version it was sorted at. */
  private readonly orders = new Map<SeriesListField, { entries: Entry[]; known: number; version: number }>();
  /** The ranking order (`ranked`), as `orders` keep theirs, and its records as last handed out. */
  private readonly rank = { entries: [] as Entry[], known: 0, version: -1, records: [] as MetricSeriesRecord[] };

  constructor(
    readonly revision: number,
    records: readonly MetricSeriesRecord[],
  ) {
    for (const r of records) this.put(r);
  }

  get size(): number {
    return this.byHash.size;
  }

  get(hash: string): MetricSeriesRecord | undefined {
    return this.byHash.get(hash)?.rec;
  }

  hashes(): Iterable<string> {
    return this.byHash.keys();
  }

  pinned(): readonly MetricSeriesRecord[] {
    this.pinOrder ??= [...this.pins.values()].sort(
      (a, b) => a.pinned_at!.localeCompare(b.pinned_at!) || (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0),
    );
    return this.pinOrder;
  }

  /**
   * SeriesLookup.ranked: sorted again only when a series was added or a `last_value` changed since,
   * from the previous order (nearly sorted: about one pass of the engine's merge sort).
   */
  ranked(): readonly MetricSeriesRecord[] {
    const o = this.rank;
    for (; o.known < this.registered.length; o.known++) o.entries.push(this.registered[o.known]!);
    const version = this.registered.length + this.lastValueChanges;
    if (o.version !== version) {
      o.entries.sort((a, b) => byRank(a.rec, b.rec));
      o.records = o.entries.map((e) => e.rec);
      o.version = version;
    } else if (o.records.length !== o.entries.length) o.records = o.entries.map((e) => e.rec);
    return o.records;
  }

  /** Apply a committed write of one series. */
  put(r: MetricSeriesRecord): void {
    const cur = this.byHash.get(r.hash);
    if (cur === undefined) {
      const e = { rec: r };
      this.byHash.set(r.hash, e);
      this.registered.push(e);
    } else {
      if (cur.rec.last_value !== r.last_value) this.lastValueChanges++;
      if (cur.rec.pinned_at !== null && r.pinned_at === null) {
        this.pins.delete(r.hash);
        this.pinOrder = null;
      }
      cur.rec = r;
    }
    if (r.pinned_at !== null) {
      this.pins.set(r.hash, r);
      this.pinOrder = null;
    }
  }

  /**
   * Every series sorted ascending by `field` then id (the listing's keyset order). An order is sorted
   * again only when it may have changed (new series; for `last_value`, a changed value), starting from
   * its previous order: nearly sorted, which the engine's merge sort finishes in about one pass.
   */
  sortedBy(field: SeriesListField): MetricSeriesRecord[] {
    let o = this.orders.get(field);
    if (o === undefined) this.orders.set(field, (o = { entries: [], known: 0, version: -1 }));
    for (; o.known < this.registered.length; o.known++) o.entries.push(this.registered[o.known]!);
    // first_seen_at and id never change: that order changes only when series are added.
    const version = field === 'first_seen_at' ? this.registered.length : this.registered.length + this.lastValueChanges;
    if (o.version !== version) {
      const cmp = field === 'first_seen_at' ? byFirstSeen : byLastValue;
      o.entries.sort((a, b) => cmp(a.rec, b.rec));
      o.version = version;
    }
    return o.entries.map((e) => e.rec);
  }
}

const byId = (a: MetricSeriesRecord, b: MetricSeriesRecord): number => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byFirstSeen = (a: MetricSeriesRecord, b: MetricSeriesRecord): number =>
  a.first_seen_at < b.first_seen_at ? -1 : a.first_seen_at > b.first_seen_at ? 1 : byId(a, b);
/** Null (no value yet) first, as the listing's value comparison orders it. */
const byLastValue = (a: MetricSeriesRecord, b: MetricSeriesRecord): number => {
  if (a.last_value === b.last_value) return byId(a, b);
  if (a.last_value === null) return -1;
  if (b.last_value === null) return 1;
  return a.last_value - b.last_value;
};

/** Ranking order (series-selection.ts): highest `last_value` first, none last, then by hash. */
const byRank = (a: MetricSeriesRecord, b: MetricSeriesRecord): number => {
  if (a.last_value !== b.last_value) {
    if (a.last_value === null) return 1;
    if (b.last_value === null) return -1;
    return b.last_value - a.last_value;
  }
  return a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0;
};

/**
 * How many series the cache holds at most across metrics before it drops the least recently used:
 * about 650 bytes of heap each (measured), so ~330 MB at the bound — five metrics of 100,000 series.
 */
export const DEFAULT_CACHED_SERIES = 500_000;

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

  constructor(
    private readonly load: (metricId: string) => MetricSeriesRecord[],
    private readonly limit = DEFAULT_CACHED_SERIES,
  ) {}

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
