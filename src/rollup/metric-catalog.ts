import { iso, type Clock } from '../clock.js';
import { ApiError, notFound, type FieldIssue } from '../errors.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/db.js';
import type { ProjectRecord } from '../catalog/records.js';
import { DELETION_RETENTION_MS, nextUpdatedAt } from '../catalog/timestamps.js';
import type { ViewCatalog } from '../transform/view-catalog.js';
import type { ViewRecord } from '../transform/view-records.js';
import { checkMetricDefinition } from './metric-definition.js';
import {
  METRIC_DEFAULTS,
  progressSeeds,
  REBUILD_FIELDS,
  type MetricRecord,
  type MetricSeriesRecord,
  type MetricSettings,
  type MetricStatus,
} from './metric-records.js';
import { MetricStore } from './metric-store.js';
import { DEFAULT_SERIES_LIMITS, type SeriesLimits } from './series-limit.js';

/** A new metric: `name` and `view_id` required, every other setting optional (defaults: METRIC_DEFAULTS). */
export type MetricCreateInput = Pick<MetricSettings, 'name' | 'view_id'> & Partial<MetricSettings>;

/** The settable fields of a metric; `deleted_at: null` restores a scheduled deletion. */
export type MetricChange = Partial<MetricSettings> & { deleted_at?: null };

/** What a series may be changed in (POST .../series/:series_id). */
export interface MetricSeriesChange {
  color?: string | null;
  pinned?: boolean;
}

/**
 * Metrics: create, update, scheduled deletion, restore, destruction, and their series. Every write is
 * one LMDB transaction that re-reads the view it aggregates, so a metric never names a view that is
 * gone or fields it does not have. `onChange` listeners hear the id of every metric a committed write
 * touched (the rollups start backfills from there).
 *
 * A view with live metrics cannot be deleted (409 naming them); destroying a view — force, purge, or
 * its collection's destruction — destroys its metrics in the same transaction.
 */
export class MetricCatalog {
  readonly store: MetricStore;
  private readonly listeners = new Set<(metricId: string) => void>();

  /** `seriesLimits`: the default `series_limit` of new metrics and the project's limit (series-limit.ts). */
  constructor(
    store: Store,
    readonly clock: Clock,
    private readonly log: Logger,
    private readonly views: ViewCatalog,
    readonly seriesLimits: SeriesLimits = DEFAULT_SERIES_LIMITS,
  ) {
    this.store = new MetricStore(store);
    views.addDependants({
      blocking: (view) => this.liveOfView(view).map((m) => ({ id: m.id, description: `metric ${m.id} ("${m.name}")` })),
      stageDestroy: (doomed) => {
        const ids = new Set(doomed.map((v) => v.id));
        const gone = doomed.length ? this.store.list(doomed[0]!.project_id).filter((m) => ids.has(m.view_id)) : [];
        for (const m of gone) this.store.stageRemoval(m);
        return () => this.notify(gone.map((m) => m.id));
      },
    });
    views.onChange((viewId) => this.viewChanged(viewId));
  }

  /** Hear the id of every metric changed by a committed write; returns the unsubscribe function. */
  onChange(listener: (metricId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tell listeners (after commit) that these metrics changed; a failing listener is logged, not fatal. */
  notify(metricIds: Iterable<string>): void {
    for (const id of new Set(metricIds)) {
      for (const listener of this.listeners) {
        try {
          listener(id);
        } catch (err) {
          this.log.error({ err, metric_id: id }, 'a metric change listener failed');
        }
      }
    }
  }

  get(projectId: string, id: string): MetricRecord | undefined {
    return this.store.get(projectId, id);
  }

  byId(id: string): MetricRecord | undefined {
    return this.store.byId(id);
  }

  /** Every metric of a project, live and scheduled. */
  list(projectId: string): MetricRecord[] {
    return this.store.list(projectId);
  }

  /** Metrics of a view not scheduled for deletion. */
  liveOfView(view: Pick<ViewRecord, 'id' | 'project_id'>): MetricRecord[] {
    return this.store.list(view.project_id).filter((m) => m.view_id === view.id && m.deleted_at === null);
  }

  /** Create a metric of a live view of `project` (checked again inside the transaction). */
  async create(project: ProjectRecord, input: MetricCreateInput): Promise<MetricRecord> {
    const metric = await this.store.store.transaction(() => {
      const view = this.liveView(project.id, input.view_id);
      const settings: MetricSettings = { ...METRIC_DEFAULTS, series_limit: this.seriesLimits.perMetric, ...input };
      assertValid(checkMetricDefinition(settings, view));
      const now = iso(this.clock.now());
      const metric: MetricRecord = {
        ...settings,
        id: newId('metric'),
        team_id: project.team_id,
        project_id: project.id,
        deleted_at: null,
        status: startStatus(view),
        created_at: now,
        updated_at: now,
        ...progressSeeds(),
        definition_revision: 1,
        series_count: 0,
        series_limit_reached_at: null,
      };
      this.store.stageMetric(metric);
      return metric;
    });
    this.notify([metric.id]);
    return metric;
  }

  /**
   * Apply an update. A change to what is stored (REBUILD_FIELDS: another view, grouping, filter …)
   * rebuilds history: status back to `initializing` (or `waiting_for_transforms`), progress re-seeded.
   */
  async update(projectId: string, id: string, change: MetricChange): Promise<MetricRecord> {
    const metric = await this.store.store.transaction(() => {
      const cur = this.store.get(projectId, id);
      if (!cur) throw notFound(`Metric ${id}`);
      if (cur.deleted_at && change.deleted_at !== null) {
        throw new ApiError(
          'conflict',
          `Metric ${id} is scheduled for deletion; send {"deleted_at": null} to restore it before changing it`,
        );
      }
      const { deleted_at: restore, ...settings } = change;
      const next: MetricRecord = { ...cur, ...settings, updated_at: nextUpdatedAt(this.clock, cur.updated_at) };
      const restoring = restore === null && cur.deleted_at !== null;
      if (restore === null) next.deleted_at = null;
      const view = this.views.get(projectId, next.view_id);
      if (!view || this.views.destroying.has(next.view_id) || view.deleted_at) {
        if (change.view_id !== undefined) this.liveView(projectId, next.view_id); // 404 naming body.view_id
        throw new ApiError(
          'conflict',
          `Metric ${id} aggregates view ${next.view_id}, which is ${view ? 'scheduled for deletion' : 'gone'}; restore the view first`,
        );
      }
      assertValid(checkMetricDefinition(next, view));
      // A restored metric was `cancelled`: the batches committed meanwhile were not counted, so its
      // history is rebuilt from the view's files (exact, like any rebuild).
      const rebuild = restoring || REBUILD_FIELDS.some((f) => JSON.stringify(next[f]) !== JSON.stringify(cur[f]));
      if (rebuild) {
        Object.assign(next, progressSeeds(), {
          status: startStatus(view),
          error_message: null,
          definition_revision: cur.definition_revision + 1,
          series_limit_reached_at: null,
        });
      }
      this.store.stageMetric(next);
      return next;
    });
    this.notify([metric.id]);
    return metric;
  }

  /**
   * Rebuild a metric's history now (POST .../backfill): a new revision, progress re-seeded, status
   * back to `initializing` (or `waiting_for_transforms`); `strategy` replaces its backfill_strategy.
   * The rollups then count live batches under the new revision and backfill every earlier view file.
   */
  async rebuild(metric: MetricRecord, strategy?: MetricRecord['backfill_strategy']): Promise<MetricRecord> {
    const next = await this.store.store.transaction(() => {
      const cur = this.store.get(metric.project_id, metric.id);
      if (!cur) throw notFound(`Metric ${metric.id}`);
      const view = this.views.get(cur.project_id, cur.view_id);
      if (!view || view.deleted_at)
        throw new ApiError(
          'conflict',
          `Metric ${cur.id} aggregates view ${cur.view_id}, which is ${view ? 'scheduled for deletion' : 'gone'}; restore the view first`,
        );
      const out: MetricRecord = {
        ...cur,
        ...progressSeeds(),
        status: startStatus(view),
        error_message: null,
        definition_revision: cur.definition_revision + 1,
        // A new revision folds anew (its registered series stay: the registry outlives revisions).
        series_limit_reached_at: null,
        backfill_strategy: strategy ?? cur.backfill_strategy,
        updated_at: nextUpdatedAt(this.clock, cur.updated_at),
      };
      this.store.stageMetric(out);
      return out;
    });
    this.notify([next.id]);
    return next;
  }

  /**
   * Schedule a metric for deletion (hidden, restorable for 7 days); its view can then be deleted. It
   * becomes `cancelled`: no live partials, no backfill (docs/metrics.md, "Metric fields"); a restore
   * rebuilds it (`update`).
   */
  async scheduleDelete(metric: MetricRecord): Promise<MetricRecord> {
    const next = await this.store.store.transaction(() => {
      const cur = this.store.get(metric.project_id, metric.id);
      if (!cur) throw notFound(`Metric ${metric.id}`);
      if (cur.deleted_at) return cur;
      const out: MetricRecord = {
        ...cur,
        deleted_at: iso(this.clock.now()),
        status: 'cancelled',
        error_message: null,
        updated_at: nextUpdatedAt(this.clock, cur.updated_at),
      };
      this.store.stageMetric(out);
      return out;
    });
    this.notify([next.id]);
    return next;
  }

  /** Destroy a metric now (live or scheduled) with its series. */
  async destroy(metric: MetricRecord): Promise<void> {
    await this.store.store.transaction(() => {
      const cur = this.store.get(metric.project_id, metric.id);
      if (!cur) throw notFound(`Metric ${metric.id}`);
      this.store.stageRemoval(cur);
    });
    this.notify([metric.id]);
  }

  /** Permanently remove metrics scheduled for deletion at least 7 days before `now`; answers their ids. */
  async purgeExpired(now: number): Promise<string[]> {
    const purged: string[] = [];
    for (const { value } of this.store.metrics.all()) {
      if (value.deleted_at === null || now - Date.parse(value.deleted_at) < DELETION_RETENTION_MS) continue;
      const gone = await this.store.store.transaction(() => {
        const cur = this.store.get(value.project_id, value.id);
        if (!cur || cur.deleted_at !== value.deleted_at) return false;
        this.store.stageRemoval(cur);
        return true;
      });
      if (gone) purged.push(value.id);
    }
    this.notify(purged);
    return purged;
  }

  /**
   * Apply `patch` to a metric in its own transaction (for the rollups: status, progress). Listeners
   * hear of it unless `notify` is false.
   */
  async patchMetric(
    metricId: string,
    patch: (cur: MetricRecord) => Partial<MetricRecord>,
    opts: { notify?: boolean } = {},
  ): Promise<MetricRecord | undefined> {
    const next = await this.store.store.transaction(() => {
      const cur = this.store.byId(metricId);
      if (!cur) return undefined;
      const out: MetricRecord = {
        ...cur,
        ...patch(cur),
        id: cur.id,
        project_id: cur.project_id,
        updated_at: nextUpdatedAt(this.clock, cur.updated_at),
      };
      this.store.stageMetric(out);
      return out;
    });
    if (next && opts.notify !== false) this.notify([metricId]);
    return next;
  }

  /** Change a series' color override or pin (pins replace ranking); 404 when the metric has no such series. */
  async updateSeries(metric: MetricRecord, seriesId: string, change: MetricSeriesChange): Promise<MetricSeriesRecord> {
    return this.store.store.transaction(() => {
      const cur = this.store.series.get(metric.id, seriesId);
      if (!cur) throw notFound(`Series ${seriesId} of metric ${metric.id}`);
      const next: MetricSeriesRecord = { ...cur };
      if (change.color !== undefined) next.color = change.color;
      if (change.pinned !== undefined) next.pinned_at = change.pinned ? (cur.pinned_at ?? iso(this.clock.now())) : null;
      this.store.stageSeries(next);
      return next;
    });
  }

  /** A live view of the project (read inside the transaction), or 404 naming body.view_id. */
  private liveView(projectId: string, viewId: string): ViewRecord {
    const v = this.views.get(projectId, viewId);
    if (!v || this.views.destroying.has(viewId)) {
      throw new ApiError('not_found', `View ${viewId} not found in project ${projectId}`, {
        details: [{ field: 'body.view_id', message: 'is not a view of this project' }],
      });
    }
    if (v.deleted_at) {
      throw new ApiError(
        'not_found',
        `View ${viewId} is scheduled for deletion; restore it with POST /v1/projects/${projectId}/views/${viewId} {"deleted_at": null}`,
        {
          details: [{ field: 'body.view_id', message: 'is scheduled for deletion' }],
        },
      );
    }
    return v;
  }

  /**
   * Waiting metrics start once their view produces records (and wait again if it stops before they
   * started): the only status moves made here; backfilling, active and error belong to the rollups.
   */
  private viewChanged(viewId: string): void {
    const view = this.views.byId(viewId);
    if (!view) return;
    const want = startStatus(view);
    const moving = this.liveOfView(view).filter(
      (m) => m.status !== want && (m.status === 'initializing' || m.status === 'waiting_for_transforms'),
    );
    if (moving.length === 0) return;
    const from: MetricStatus = want === 'initializing' ? 'waiting_for_transforms' : 'initializing';
    void this.store.store
      .transaction(() =>
        moving.flatMap((m) => {
          const cur = this.store.get(m.project_id, m.id);
          if (!cur || cur.status !== from) return [];
          this.store.stageMetric({ ...cur, status: want, updated_at: nextUpdatedAt(this.clock, cur.updated_at) });
          return [cur.id];
        }),
      )
      .then(
        (ids) => this.notify(ids),
        (err: unknown) => this.log.error({ err, view_id: viewId }, 'metric status could not follow its view'),
      );
  }
}

/** 400 listing every problem of a definition (no-op when there is none). */
function assertValid(issues: FieldIssue[]): void {
  if (issues.length === 0) return;
  throw new ApiError(
    'request_validation_failed',
    `Invalid metric: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`,
    { details: issues },
  );
}

/** A new or rebuilt metric starts `initializing`, or `waiting_for_transforms` while its view produces nothing. */
function startStatus(view: ViewRecord): MetricStatus {
  return view.status === 'active' ? 'initializing' : 'waiting_for_transforms';
}
