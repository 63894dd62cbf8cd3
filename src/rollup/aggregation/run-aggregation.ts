import { ApiError } from '../../errors.js';
import type { Forecast, Regression } from '../fits/index.js';
import type { ChartValue, MetricRecord } from '../metric-records.js';
import type { SeriesLookup } from '../series-cache.js';
import { OTHER_SERIES, TOTAL_SERIES, type ColumnFigure, type StoredColumns } from '../rollup-types.js';
import type { RollupReader } from '../rollup-reader-contract.js';
import { allocColumns, concatColumns, readColumns } from '../stored-columns.js';
import { assembleSeries, CellGrid, otherCellsOf, type AssembledSeries, type OtherCells } from './assemble.js';
import { columnsPart, sealable, sealedTables, type SealedPart } from './sealed-answer.js';
import type { SealedCells } from './sealed-cells.js';
import { figuresFor, type NullHandling } from './chart-values.js';
import type { Interval } from './buckets.js';
import { answerEnd, planReads, scanSpans } from './read-plan.js';
import { tailCells, tailUnionCache, type TailUnionCache } from './tail-union.js';
import { OTHER_DETAILS, selectSeries, type SeriesDetails, type SeriesSelection } from './series-selection.js';
import { fitSeries, type FitRequest, type SeriesFits } from './series-fits.js';
import { WindowSeries, type SeriesSet } from './window-series.js';

const NO_FITS: SeriesFits = { regression: null, forecast: null };
/**
 * Partial rows (not compacted yet) one read of an observed answer merges before it leaves the older
 * ones out (docs/metrics.md, "How answers are served"): ~50 ms of merging at most; live traffic
 * keeps far fewer waiting, an import's backlog (a partial row per record) far more.
 */
export const OBSERVED_PARTIAL_BUDGET = 50_000;
/** Partials of the last 10 minutes are always merged into an observed answer (the live edge). */
const LIVE_EDGE_MS = 10 * 60_000;
/** The read plan of an answer whose series are all read at once (no tail folds). */
const NO_SELECTION: SeriesSelection = { kept: [], folds: false, tail: [], seriesTotal: 0 };
import {
  recordPoints,
  recordsObject,
  type CoverageMode,
  type EmptyBucketHandling,
  type RecordRules,
  type RecordTable,
} from './series-records.js';
import type { ReadSpan } from './tiling.js';
import { planWindow, type WindowPlan, type WindowRequest } from './window-plan.js';

/** A validated aggregation query with every default applied (api/metrics/aggregation-query.ts). */
export interface AggregationRequest {
  coverage: CoverageMode;
  window: WindowRequest;
  normalize: boolean;
  values: ChartValue[];
  emptyHandling: EmptyBucketHandling;
  nullHandling: NullHandling;
  maxSeries: number;
  /** The `series` filter, or null. */
  series: string[] | null;
  regression: FitRequest['regression'];
  /** `forecast_at` (epoch ms), or null to take the default (runAggregation). */
  forecastAt: number | null;
  /**
   * Every series with data answered as itself, pinned first then by rank: no `__other__`, no
   * `maxSeries` (in-process callers such as monitors; never the HTTP query). Ignored with `series`.
   */
  allSeries?: boolean;
}

/** Spec: TimeseriesAggregation (`object: aggregation`). */
export interface TimeseriesAggregation {
  object: 'aggregation';
  coverage_mode: CoverageMode;
  coverage_reasons: Array<{ view_id: string; view_name: string; reason: string; count: number | null }>;
  start_at: string;
  end_at: string;
  interval: Interval;
  values: ChartValue[];
  series: Array<{
    details: SeriesDetails;
    records: Record<string, Array<number | null>>;
    regression: Regression | null;
    forecast: Forecast | null;
  }>;
  series_total: number;
  complete_through_at: string | null;
}

/** A TimeseriesAggregation with each series' records still a table (aggregation-json.ts writes it as text). */
export interface AggregationAnswer extends Omit<TimeseriesAggregation, 'series'> {
  series: Array<{
    details: SeriesDetails;
    table: RecordTable;
    regression: Regression | null;
    forecast: Forecast | null;
  }>;
}

export interface AggregationContext {
  /** The rollups; null while they are not available (the answer is then 503, after the query is checked). */
  reader: RollupReader | null;
  metric: MetricRecord;
  /** The metric's series registry (in memory: MetricStore.seriesView). */
  registry: SeriesLookup;
  /** The view the metric aggregates, for coverage reasons. */
  view: { id: string; name: string };
  now: number;
  /** Merged tails of `__other__` kept between answers (default: the process's, tail-union.ts). */
  tailCache?: TailUnionCache;
  /**
   * Where sealed buckets end for this metric given its `completeThrough` (the route's estimate of
   * what live data can no longer reach: docs/metrics.md, "Sealed buckets"); absent: nothing is taken
   * from the sealed-bucket cache.
   */
  sealBefore?(completeThrough: number): number;
  /**
   * The saved range `time_range=custom` resolves to, instead of the metric's (a page's: the
   * `page_id` parameter); null when that page saves none. Absent: the metric's.
   */
  customRange?: { start: number; end: number } | null;
  /** `horizonTime` of the fits module: when a forecast horizon ends. */
  horizonTime(h: MetricRecord['ui_chart_forecast_horizon'], now: number): number;
}

/**
 * Answers one aggregation query: window → which series have data → series selection → tiled reads
 * (figures only unless merging needs sketches) → assembly → fits (docs/metrics.md, "Aggregation").
 */
export async function runAggregation(ctx: AggregationContext, req: AggregationRequest): Promise<TimeseriesAggregation> {
  const answer = await answerAggregation(ctx, req);
  return {
    ...answer,
    series: answer.series.map((s) => ({
      details: s.details,
      records: recordsObject(s.table),
      regression: s.regression,
      forecast: s.forecast,
    })),
  };
}

/** runAggregation's answer with the records as tables: the API writes it as JSON text (aggregation-json.ts). */
export async function answerAggregation(ctx: AggregationContext, req: AggregationRequest): Promise<AggregationAnswer> {
  const { metric, now } = ctx;
  const needsEarliest = req.window.explicit === null && req.window.timeRange === 'all_time';
  // The window is planned before the rollups are needed, so its 400s come first.
  const window = planWindow(req.window, {
    now,
    timeZone: req.window.timeZone,
    custom: ctx.customRange !== undefined ? ctx.customRange : savedCustomRange(metric),
    earliest: needsEarliest ? await earliestData(available(ctx.reader), metric, now) : null,
  });
  const reader = available(ctx.reader);
  const completeThrough = reader.completeThrough(metric.id);
  // The answer's own reads fetch only the figures its values use; the merged tail's (cached between answers of any values) every one.
  const figures = figuresFor(req.values);
  // Observed answers while a compaction backlog waits: past the budget, partials older than the
  // watermark are left out and the answer says so (coverage reason `compacting`); those of the last
  // minutes always stay (while an import's batches are counted the watermark sits days back).
  const partialBudget =
    req.coverage === 'observed' && completeThrough !== null
      ? { rows: OBSERVED_PARTIAL_BUDGET, keepFrom: Math.max(completeThrough, now - LIVE_EDGE_MS) }
      : undefined;
  let leftOut = 0;
  const read = async (
    spans: readonly ReadSpan[],
    series: readonly string[] | null,
    only?: ReadonlySet<ColumnFigure>,
  ): Promise<StoredColumns> => {
    if (series !== null && series.length === 0) return allocColumns(0, [], false);
    const parts = await Promise.all(
      spans.map((s) =>
        readColumns(reader, {
          metricId: metric.id,
          revision: metric.definition_revision,
          tier: s.tier,
          from: s.from,
          to: s.to,
          series,
          sketches: s.sketches,
          figures: only,
          // The answer's own reads only: the merged tail of `__other__` is cached between answers.
          ...(only !== undefined && partialBudget !== undefined ? { partialBudget } : {}),
        }),
      ),
    );
    for (const p of parts) leftOut += p.leftOut ?? 0;
    return parts.length === 0 ? allocColumns(0, [], false) : concatColumns(parts);
  };
  /** `compute` with its part marked incomplete when a read of it left partials out (never cached). */
  const marked =
    (compute: (rules: RecordRules) => Promise<SealedPart>) =>
    async (rules: RecordRules): Promise<SealedPart> => {
      const before = leftOut;
      const part = await compute(rules);
      if (leftOut > before) part.incomplete = true;
      return part;
    };

  const grouped = metric.group_by.length > 0;
  const registry = ctx.registry;
  const selectionOf = (withData: SeriesSet, totalHasData: boolean) =>
    selectSeries({
      metricName: metric.name,
      grouped,
      registry,
      withData,
      totalHasData,
      filter: req.series,
      maxSeries: req.maxSeries,
      all: req.allSeries === true,
    });
  const planOf = (boundaries: readonly number[], selection: SeriesSelection) =>
    planReads({
      boundaries,
      completeThrough,
      coverage: req.coverage,
      selection,
      values: req.values,
      nullHandling: req.nullHandling,
    });

  const everyCandidate = nothingFolds(grouped, registry, req, metric.series_limit_reached_at != null);
  const rules = recordRules(req, window.boundaries, completeThrough);
  const sealed = reader.sealed;
  const cacheable =
    sealed !== undefined && ctx.sealBefore !== undefined && completeThrough !== null && sealable(req.values);
  const sealBefore = cacheable ? Math.min(ctx.sealBefore!(completeThrough), completeThrough) : null;
  // What cached rows depend on besides their bucket and series (sealed-cells.ts).
  const shapeKey = [
    metric.id,
    metric.definition_revision,
    window.interval,
    req.window.timeZone,
    req.values.join(','),
    req.nullHandling,
    req.emptyHandling,
    req.normalize,
  ].join('\u0000');
  if (everyCandidate !== null) {
    // Nothing can fold into `__other__`: every series that may answer is read at once and the ones
    // with data are found in their rows (one read instead of a scan and a read). The registry holds
    // every series with rows: a batch's or file's series are registered before its rows are merged.
    const readAll = marked(async (rules: RecordRules) =>
      columnsPart(
        await read(planOf(rules.boundaries, NO_SELECTION).spans, everyCandidate, figures),
        everyCandidate,
        rules,
      ),
    );
    // The leading sealed buckets come from the cache; DuckDB reads only the buckets after them.
    const { tables, withData } = cacheable
      ? await sealedTables({
          cache: sealed,
          key: `${shapeKey}\u0000all\u0000${everyCandidate.join(',')}`,
          metricId: metric.id,
          sealBefore: sealBefore!,
          candidates: everyCandidate,
          rules,
          compute: (sub) => readAll({ ...rules, boundaries: sub }),
        })
      : await readAll(rules);
    const totalHasData = withData.delete(TOTAL_SERIES);
    const selection = selectionOf(grouped ? withData : new Set(), totalHasData);
    const byHash = new Map(everyCandidate.map((h, j) => [h, tables[j]!]));
    return answerOf(
      ctx,
      req,
      window,
      completeThrough,
      leftOut,
      selection,
      selection.kept.map((details) => ({ details, table: byHash.get(details.hash)! })),
    );
  }
  // Which series have data: their names only, never their rows (a metric may have 100,000 series).
  const scan = (boundaries: readonly number[]) =>
    reader.seriesWithData({
      metricId: metric.id,
      revision: metric.definition_revision,
      spans: scanSpans(boundaries, req.coverage, completeThrough),
    });
  const scanned = cacheable
    ? await sealedScan(sealed, metric, window.boundaries, sealBefore!, scan)
    : WindowSeries.of(await scan(window.boundaries));
  const chosen = selectionOf(grouped ? scanned : new Set(), scanned.total);
  const kept = chosen.kept.map((s) => s.hash);
  // The kept series, then `__other__` when a tail folds.
  const candidates = chosen.folds ? [...kept, OTHER_SERIES] : kept;
  /** The kept series' and `__other__`'s tables over `rules.boundaries` (the window or a suffix of it). */
  const compute = marked(async (rules: RecordRules): Promise<SealedPart> => {
    const { boundaries } = rules;
    const plan = planOf(boundaries, chosen);
    const grid = new CellGrid(await read(plan.spans, plan.series, figures), boundaries);
    let other: OtherCells = { method: plan.other === 'merge' ? 'none' : plan.other };
    if (plan.other === 'merge') {
      const end = answerEnd(boundaries, req.coverage, completeThrough);
      const tail = {
        metricId: metric.id,
        revision: metric.definition_revision,
        kept,
        tail: () => chosen.tail,
        boundaries,
        end,
        completeThrough,
        sketches: plan.tailSketches,
        total: grid.cells(TOTAL_SERIES),
        read,
      };
      other = { method: 'merge', cells: await tailCells(tail, ctx.tailCache ?? tailUnionCache) };
    }
    const otherCells = otherCellsOf(grid, chosen, other);
    const assembled = assembleSeries(
      grid,
      chosen,
      otherCells === null ? other : { method: 'merge', cells: otherCells },
      rules,
    );
    return {
      tables: assembled.map((s) => s.table),
      hasRecords: (j, i) => (j < kept.length ? grid.hasRecords(kept[j]!, i) : (otherCells?.[i]?.count ?? 0) > 0),
      withData: new Set(),
    };
  });
  // A sealed bucket's `__other__` is the same whatever the window as long as the same series are kept
  // as themselves (the tail is every other series with data in it): the kept list is in the key.
  // One ranking per dashboard is kept: the same shape, `max_series` and filter under another ranking replaces it.
  const family = `${shapeKey}\u0000kept\u0000${req.series === null ? `top ${req.maxSeries}` : `series ${req.series.join(',')}`}`;
  const { tables } = cacheable
    ? await sealedTables({
        cache: sealed,
        key: `${family}\u0000${candidates.join(',')}`,
        family,
        metricId: metric.id,
        sealBefore: sealBefore!,
        candidates,
        rules,
        compute: (sub) => compute({ ...rules, boundaries: sub }),
      })
    : await compute(rules);
  const details = [...chosen.kept, ...(candidates.length > kept.length ? [OTHER_DETAILS] : [])];
  return answerOf(
    ctx,
    req,
    window,
    completeThrough,
    leftOut,
    chosen,
    details.map((d, j) => ({ details: d, table: tables[j]! })),
  );
}

/**
 * The series with data in the window, the part over its sealed buckets kept between answers under
 * the sealed cache's rules (sealed-cells.ts: a write there drops it): an answer of a wholly sealed
 * window then asks DuckDB nothing.
 */
async function sealedScan(
  cache: SealedCells,
  metric: MetricRecord,
  boundaries: readonly number[],
  sealBefore: number,
  scan: (boundaries: readonly number[]) => Promise<string[]>,
): Promise<WindowSeries> {
  let s = 0;
  while (s + 1 < boundaries.length && boundaries[s + 1]! <= sealBefore) s++;
  if (s === 0) return WindowSeries.of(await scan(boundaries));
  const generation = cache.begin(metric.id, sealBefore);
  const since = cache.writeMark(metric.id);
  const key = `${metric.id}\u0000${metric.definition_revision}\u0000${boundaries[0]}\u0000${boundaries[s]}`;
  const head = async (): Promise<readonly string[]> => {
    const kept = cache.getScan(key, generation);
    if (kept !== undefined) return kept;
    const found = await scan(boundaries.slice(0, s + 1));
    cache.putScan(key, metric.id, generation, found, { from: boundaries[0]!, to: boundaries[s]!, since });
    return found;
  };
  const [a, b] = await Promise.all([head(), s + 1 < boundaries.length ? scan(boundaries.slice(s)) : []]);
  // The kept part's set is made once (window-series.ts); only the later part's few series are hashed.
  return WindowSeries.joined(a, b);
}

/** The query's rules for turning cells into records. */
function recordRules(
  req: AggregationRequest,
  boundaries: readonly number[],
  completeThrough: number | null,
): RecordRules {
  return {
    boundaries,
    completeThrough,
    coverage: req.coverage,
    normalize: req.normalize,
    values: req.values,
    nullHandling: req.nullHandling,
    emptyHandling: req.emptyHandling,
  };
}

/** The answer around its assembled series: fits, coverage, window and watermark. */
function answerOf(
  ctx: AggregationContext,
  req: AggregationRequest,
  window: WindowPlan,
  completeThrough: number | null,
  leftOut: number,
  selection: SeriesSelection,
  assembled: readonly AssembledSeries[],
): AggregationAnswer {
  const { metric, now } = ctx;
  const fits: FitRequest = {
    regression: req.regression,
    forecastAt:
      req.forecastAt ??
      defaultForecastAt(metric, window.projectFrom !== null ? window.requestedEnd : null, now, ctx.horizonTime),
    forecastModel: metric.ui_chart_forecast_model,
  };
  return {
    object: 'aggregation',
    coverage_mode: req.coverage,
    coverage_reasons: [
      ...(metric.status === 'active'
        ? []
        : [{ view_id: ctx.view.id, view_name: ctx.view.name, reason: metric.status, count: null }]),
      // Observed, during a compaction backlog: buckets before the watermark lack `count` partial rows.
      ...(leftOut > 0
        ? [{ view_id: ctx.view.id, view_name: ctx.view.name, reason: 'compacting', count: leftOut }]
        : []),
    ],
    start_at: new Date(window.start).toISOString(),
    end_at: new Date(window.end).toISOString(),
    interval: window.interval,
    values: req.values,
    // Points only when a fit uses them (one object per answered bucket otherwise made for nothing).
    series: assembled.map((s) => ({
      details: s.details,
      table: s.table,
      ...(fits.regression === 'none' && fits.forecastAt === null ? NO_FITS : fitSeries(recordPoints(s.table), fits)),
    })),
    series_total: selection.seriesTotal,
    complete_through_at: completeThrough === null ? null : new Date(completeThrough).toISOString(),
  };
}

/**
 * The series to read when no tail can fold (no filter, no pins, no more registered series than
 * `max_series`, no series folded at ingest; or no group_by; or every series asked for): every one
 * that may answer. Null when a tail may fold. `folded`: the revision has rows under the stored
 * `__other__` (series past the series limit, series-limit.ts), which always fold.
 */
function nothingFolds(
  grouped: boolean,
  registry: SeriesLookup,
  req: AggregationRequest,
  folded: boolean,
): string[] | null {
  if (!grouped) return [TOTAL_SERIES];
  if (req.allSeries === true && req.series === null)
    return folded ? [...registry.hashes(), OTHER_SERIES] : [...registry.hashes()];
  if (folded || req.series !== null || registry.size > req.maxSeries || registry.pinned().length > 0) return null;
  return [...registry.hashes()];
}

function available(reader: RollupReader | null): RollupReader {
  if (reader === null) {
    throw new ApiError(
      'service_unavailable',
      'Metric rollups are not available on this server (the pipeline is off or the rollup store is not open yet); try again once it has started',
    );
  }
  return reader;
}

function savedCustomRange(m: MetricRecord): { start: number; end: number } | null {
  if (m.ui_chart_custom_range_start_at === null || m.ui_chart_custom_range_end_at === null) return null;
  return { start: Date.parse(m.ui_chart_custom_range_start_at), end: Date.parse(m.ui_chart_custom_range_end_at) };
}

/**
 * Without `forecast_at`: a `next_*` range forecasts at its end; otherwise the metric's horizon when
 * it opens with the forecast shown (`ui_chart_show_forecast`); otherwise none.
 */
function defaultForecastAt(
  m: MetricRecord,
  rangeEnd: number | null,
  now: number,
  horizonTime: AggregationContext['horizonTime'],
): number | null {
  if (rangeEnd !== null) return rangeEnd;
  return m.ui_chart_show_forecast ? horizonTime(m.ui_chart_forecast_horizon, now) : null;
}

/**
 * Start of the earliest stored data (`all_time`): the first row of the total in the coarsest tier
 * that has one (a month is only stored once final, so data of this month alone is found in days,
 * hours or minutes; each finer read is small because the coarser one was empty).
 */
async function earliestData(reader: RollupReader, m: MetricRecord, now: number): Promise<number | null> {
  for (const tier of ['month', 'day', 'hour', 'minute'] as const) {
    const rows = await reader.read({
      metricId: m.id,
      revision: m.definition_revision,
      tier,
      from: 0,
      to: now + 60_000,
      series: [TOTAL_SERIES],
      sketches: false,
    });
    if (rows.length > 0) return rows.reduce((min, r) => Math.min(min, r.start), Infinity);
  }
  return null;
}
