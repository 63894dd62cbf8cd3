import type { ViewBackfiller } from './transform/view-backfill.js';
import type { JoinProcessor } from './transform/join-processor.js';
import type { ViewGenerator } from './transform/view-generation.js';
import type { AccountsRepo } from './accounts/repo.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import type { Store } from './store/db.js';
import type { ProjectsRepo } from './catalog/projects.js';
import type { ActivityTracker } from './ingest/activity.js';
import type { SourcesRepo } from './catalog/sources.js';
import type { IngestKeysRepo } from './catalog/ingest-keys.js';
import type { CollectionsRepo } from './catalog/collections.js';
import type { CollectionDestroyer } from './catalog/purge.js';
import type { Spool } from './spool/spool.js';
import type { PipelineTelemetry } from './ingest/telemetry.js';
import type { SchemaService } from './schema/schema-service.js';
import type { PipelineRunner } from './pipeline/runner.js';
import type { ViewCatalog } from './transform/view-catalog.js';
import type { MetricCatalog } from './rollup/metric-catalog.js';
import type { RollupReader } from './rollup/rollup-reader-contract.js';
import type { LateDataFiles } from './rollup/late-data.js';
import type { LateRefolder } from './rollup/late-refold.js';
import type { PagesRepo } from './catalog/pages.js';
import type { PageEvents } from './web/page-events.js';
import type { WebAssets } from './web/assets.js';
import type { MonitorCatalog } from './monitor/monitor-catalog.js';
import type { MonitorRunner } from './monitor/monitor-runner.js';
import type { AttentionRegistry } from './attention/registry.js';
import type { Notifier } from './notify/notifier.js';
import type { JobScheduler } from './schedule/scheduler.js';
import type { AggregationService } from './rollup/aggregation/aggregation-service.js';
import type { OutboundClient } from './outbound/types.js';
import type { RecordSink } from './ingest/record-sink-types.js';
import type { PullService } from './pull/pull-service.js';
import type { CheckService } from './pull/check-service.js';

/** What route modules and background jobs depend on; built once by the server. */
export interface Services {
  config: Config;
  clock: Clock;
  log: Logger;
  store: Store;
  accounts: AccountsRepo;
  projects: ProjectsRepo;
  /** last_activity_at / last_used_at, written at most once a minute each. */
  activity: ActivityTracker;
  sources: SourcesRepo;
  ingestKeys: IngestKeysRepo;
  collections: CollectionsRepo;
  /** Hooks that remove a collection's data (spool, files, schema versions) when it is destroyed; see catalog/purge.ts. */
  collectionDestroyers: CollectionDestroyer[];
  /** The durable ingest spool; the pipeline consumes it through lease/complete/release. */
  spool: Spool;
  /** Per-minute pipeline counters behind the pipeline endpoints. */
  telemetry: PipelineTelemetry;
  /** Collection schemas: versions, shapes, file manifests, reports, docs (src/schema/schema-service.ts). */
  schema: SchemaService;
  /** The pipeline loop (spool → collection files); null when `config.pipeline` is off. */
  pipeline: PipelineRunner | null;
  /** Background backfill of view transforms (null when the pipeline is off). */
  viewBackfill: ViewBackfiller | null;
  /** Background processing of join views (src/transform/join-processor.ts); null when the pipeline is off. */
  viewJoins: JoinProcessor | null;
  /** Script generation for auto views (src/transform/view-generation.ts); null when `config.pipeline` is off. */
  viewGeneration: ViewGenerator | null;
  /** Views: records, transforms, versions, waiting shapes, output manifests (src/transform/view-catalog.ts). */
  views: ViewCatalog;
  /** Metrics and their series (src/rollup/metric-catalog.ts). */
  metrics: MetricCatalog;
  /** The metrics' stored rollups (DuckDB `rollups.duckdb`, src/rollup/); null until opened or when the pipeline is off. */
  rollups: RollupReader | null;
  /** Late data files: events kept out of the rollups for arriving behind the late data window (src/rollup/late-data.ts). */
  lateData: LateDataFiles;
  /** Folds queued late data files back into the rollups; null when the pipeline is off (queued files wait for it). */
  lateRefold: LateRefolder | null;
  /** Pages (dashboards) and their components (src/catalog/pages.ts). */
  pages: PagesRepo;
  /** Live refresh of open pages (src/web/page-events.ts). */
  pageEvents: PageEvents;
  /** The browser code built by esbuild (dist/web), served under /assets (src/web/assets.ts). */
  webAssets: WebAssets;
  /** Monitors, their series states and alerts (src/monitor/monitor-catalog.ts). */
  monitors: MonitorCatalog;
  /** Evaluates active monitors on their schedules (src/monitor/monitor-runner.ts); null when the pipeline is off. */
  monitorRunner: MonitorRunner | null;
  /** Attention providers, registered once per capability (src/attention/registry.ts). */
  attention: AttentionRegistry;
  /** Notification channels, the alert outbox and its delivery (src/notify/notifier.ts). */
  notifier: Notifier;
  /** Every periodic or kicked job of the node (src/schedule/scheduler.ts); tests with a ManualClock call `runDue`. */
  scheduler: JobScheduler;
  /** Metric aggregations from plain arguments, for the API, monitors, pages and the CLI (src/rollup/aggregation/aggregation-service.ts). */
  aggregation: AggregationService;
  /** The guarded outbound HTTP client every call out goes through (src/outbound/, docs/outbound.md). */
  outbound: OutboundClient;
  /**
   * Writes records into a collection for in-process producers (pulls, checks): the ingest front's
   * validation, limits, backpressure, idempotency, telemetry and activity, no key; refusals are values.
   */
  sink: RecordSink;
  /** Pulls: scheduled fetches into collections (src/pull/pull-service.ts). */
  pulls: PullService;
  /** Checks: scheduled uptime observations (src/pull/check-service.ts). */
  checks: CheckService;
}
