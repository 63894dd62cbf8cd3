import { ApiError, type FieldIssue } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { ViewCatalog } from '../../transform/view-catalog.js';
import { compileValidator, assertValid } from '../../http/validation.js';
import { aggregationQuerySchema, type AggregationQuery } from './aggregation-schema.js';
import { timestampMs } from '../../timestamp.js';
import { horizonTime } from '../fits/index.js';
import type { MetricCatalog } from '../metric-catalog.js';
import type { MetricRecord } from '../metric-records.js';
import type { RollupReader } from '../rollup-reader-contract.js';
import { aggregationJsonParts } from './aggregation-json.js';
import { parseAggregationQuery } from './aggregation-query.js';
import {
  answerAggregation,
  runAggregation,
  type AggregationContext,
  type AggregationRequest,
  type TimeseriesAggregation,
} from './run-aggregation.js';
import { mergedWindowValues, type WindowMergeRequest } from './window-merge.js';

export type { AggregationQuery } from './aggregation-schema.js';

/** A saved custom range as the API writes it (ISO 8601 date-times, `[start_at, end_at)`). */
export interface CustomRange {
  start_at: string;
  end_at: string;
}

/** What in-process callers may ask beyond the HTTP query. */
export interface AggregationOptions {
  /** Every series with data, each as itself: no `__other__`, no `max_series` (monitors). Ignored with `series`. */
  allSeries?: true;
  /** The saved range `time_range=custom` resolves to, instead of the metric's or `page_id`'s (pages). */
  customRange?: CustomRange;
}

/**
 * Resolves `page_id` for a metric: the page's saved custom range, null when the page saves none, or
 * undefined when no page of the metric's project has that id (the answer is then 404).
 */
export type PageRangeResolver = (metric: MetricRecord, pageId: string) => CustomRange | null | undefined;

/** What the service reads, taken at each call: `rollups` opens after the server has started. */
export interface AggregationDeps {
  clock: Clock;
  metrics: MetricCatalog;
  views: ViewCatalog;
  readonly rollups: RollupReader | null;
}

/** Minutes kept between the seal point and what live data can reach: a batch leased before the view's watermark last moved may still land there. */
const SEAL_MARGIN_MS = 2 * 60_000;

/**
 * A metric's time series answered from plain arguments (docs/metrics.md, "Aggregation"): the HTTP
 * route, monitors, pages and the CLI all ask here. The query is the HTTP query's parameters by the
 * same names, checked by the same ajv schema (compiled once here) and rules, so every bad query is
 * the same 400 `ApiError` in-process as over HTTP; a bad query is found before the rollups are asked
 * (503 while they are not open).
 */
export class AggregationService {
  private readonly validate = compileValidator('query', aggregationQuerySchema);
  private pageRange: PageRangeResolver | null = null;

  /** `deps` is called at each answer (the server's Services bag fits it). */
  constructor(private readonly deps: () => AggregationDeps) {}

  /**
   * Registers how `page_id` is resolved (the pages feature, once); until then every `page_id` is 404
   * `not_found` naming `query.page_id`.
   */
  resolvePagesWith(resolver: PageRangeResolver): void {
    this.pageRange = resolver;
  }

  /** The answer as objects (spec: TimeseriesAggregation). */
  async answer(
    metric: MetricRecord,
    query: AggregationQuery,
    opts: AggregationOptions = {},
  ): Promise<TimeseriesAggregation> {
    const { ctx, req } = this.prepare(metric, query, opts);
    return runAggregation(ctx, req);
  }

  /**
   * The answer's JSON text as the API sends it (a string, or one buffer when sealed buckets brought
   * their text as bytes): the records are written straight from their tables, no object per cell.
   */
  async answerJson(
    metric: MetricRecord,
    query: AggregationQuery,
    opts: AggregationOptions = {},
  ): Promise<string | Buffer> {
    const { ctx, req } = this.prepare(metric, query, opts);
    return aggregationJsonParts(await answerAggregation(ctx, req));
  }

  /**
   * One value per series over a whole window taken as one bucket, states merged (window-merge.ts):
   * monitors judge a p95 or a distinct count over a window of many minutes with it. In-process only;
   * 503 while the rollups are not open.
   */
  async windowValues(metric: MetricRecord, req: WindowMergeRequest): Promise<Map<string, number | null>> {
    const reader = this.deps().rollups;
    if (reader === null)
      throw new ApiError(
        'service_unavailable',
        'Metric rollups are not available on this server; try again once it has started',
      );
    return mergedWindowValues(reader, metric, req);
  }

  /** The checked request and its context; throws the query's 400s, then `page_id`'s 404. */
  private prepare(
    metric: MetricRecord,
    query: AggregationQuery,
    opts: AggregationOptions,
  ): { ctx: AggregationContext; req: AggregationRequest } {
    const d = this.deps();
    // ajv coerces in place ("false" → false): the caller's object is left alone.
    const q = { ...query } as AggregationQuery;
    assertValid(this.validate(q));
    const registry = d.metrics.store.seriesView(metric);
    const now = d.clock.now();
    const known = { has: (hash: string) => registry.get(hash) !== undefined };
    const req: AggregationRequest = {
      ...parseAggregationQuery(q, metric, known, now),
      ...(opts.allSeries === true ? { allSeries: true } : {}),
    };
    const customRange =
      opts.customRange !== undefined
        ? parseCustomRange(opts.customRange)
        : q.page_id !== undefined
          ? this.pageCustomRange(metric, q.page_id)
          : undefined;
    const view = d.views.get(metric.project_id, metric.view_id);
    const ctx: AggregationContext = {
      reader: d.rollups,
      metric,
      registry,
      view: { id: metric.view_id, name: view?.name ?? metric.view_id },
      now,
      horizonTime,
      sealBefore: (completeThrough) => this.sealPoint(completeThrough),
      ...(customRange !== undefined ? { customRange } : {}),
    };
    return { ctx, req };
  }

  /** `page_id`'s saved range (null: the page saves none), or 404 when no such page exists (also the alerts list's `page_id`). */
  pageCustomRange(metric: MetricRecord, pageId: string): { start: number; end: number } | null {
    const range = this.pageRange?.(metric, pageId);
    if (range === undefined) {
      const shownId = JSON.stringify(pageId.length > 64 ? `${pageId.slice(0, 64)}…` : pageId);
      const message = `names page ${shownId}, which does not exist in project ${metric.project_id}; leave page_id out to use the metric's saved range`;
      throw new ApiError('not_found', `query.page_id ${message}`, { details: [{ field: 'query.page_id', message }] });
    }
    return range === null ? null : parseCustomRange(range);
  }

  /**
   * Where a metric's sealed buckets end (docs/metrics.md, "Sealed buckets"): its watermark less a
   * margin, floored to the minute. Only a guess at what no longer changes, which keeps the cache
   * useful: a write that lands behind it anyway (late data within the project's window, an import of
   * history, a re-backfill) drops the cached buckets it touches, and only those (sealed-cells.ts).
   * It used to stay behind the project's late data window as well: with a window of days (an import
   * of a month's history) nothing was ever sealed and every answer read every bucket.
   */
  private sealPoint(completeThrough: number): number {
    return Math.floor((completeThrough - SEAL_MARGIN_MS) / 60_000) * 60_000;
  }
}

/** A caller's custom range in epoch ms; a range that is not one is a 400 naming `custom_range.*` (a programming error of the caller, said plainly). */
function parseCustomRange(r: CustomRange): { start: number; end: number } {
  const issues: FieldIssue[] = [];
  const start = typeof r.start_at === 'string' ? timestampMs(r.start_at) : Number.NaN;
  const end = typeof r.end_at === 'string' ? timestampMs(r.end_at) : Number.NaN;
  if (Number.isNaN(start))
    issues.push({ field: 'custom_range.start_at', message: 'must be an ISO 8601 date-time from 1970 on' });
  if (Number.isNaN(end))
    issues.push({ field: 'custom_range.end_at', message: 'must be an ISO 8601 date-time from 1970 on' });
  if (issues.length === 0 && end <= start)
    issues.push({
      field: 'custom_range.end_at',
      message: `must be after start_at (${r.start_at} to ${r.end_at} is empty)`,
    });
  assertValid(issues);
  return { start, end };
}
