import { mkdirSync, readdirSync } from 'node:fs';

/** Names in a directory; none when it does not exist. */
function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
import {
  App,
  us_listen_socket_close,
  us_socket_local_port,
  type HttpResponse,
  type TemplatedApp,
  type us_listen_socket,
} from 'uws-pack';
import { AccountsRepo } from './accounts/repo.js';
import { ProjectsRepo } from './catalog/projects.js';
import { SourcesRepo } from './catalog/sources.js';
import { IngestKeysRepo } from './catalog/ingest-keys.js';
import { CollectionsRepo } from './catalog/collections.js';
import { registerPurgeJob } from './catalog/purge-scheduler.js';
import { ActivityTracker } from './ingest/activity.js';
import { SchemaService } from './schema/schema-service.js';
import { PipelineRunner } from './pipeline/runner.js';
import { sweepViewOrphans, viewCommitParticipant, viewTasksFor } from './transform/view-commit.js';
import { ViewBackfiller } from './transform/view-backfill.js';
import { JoinProcessor } from './transform/join-processor.js';
import { ViewGenerator } from './transform/view-generation.js';
import { ViewCatalog } from './transform/view-catalog.js';
import { MetricCatalog } from './rollup/metric-catalog.js';
import { seriesLimitsOf } from './rollup/series-limit.js';
import { LateDataFiles } from './rollup/late-data.js';
import { LateRefolder } from './rollup/late-refold.js';
import { Rollups } from './rollup/rollups.js';
import { MonitorCatalog } from './monitor/monitor-catalog.js';
import { AttentionRegistry } from './attention/registry.js';
import { pipelineAttention, refusalAttention } from './attention/providers.js';
import { MonitorRunner } from './monitor/monitor-runner.js';
import { monitorAttention } from './monitor/monitor-attention.js';
import { seriesLimitAttention } from './attention/metric-series-limit.js';
import { Notifier } from './notify/notifier.js';
import { AggregationService } from './rollup/aggregation/aggregation-service.js';
import { attachConsumerTasks, type ConsumerContext } from './pipeline/output-consumer.js';
import { OUTPUT_CONSUMERS } from './pipeline/output-consumers.js';
import { WorkerPool } from './pipeline/pool.js';
import type { ThreadCounters } from './pipeline/counters.js';
import type { DuckDbMemory } from './rollup/rollup-store.js';
import { processMemory, type ProcessMemory } from './self-metrics/process-memory.js';
import { createIngestServices, mountIngest } from './ingest/front.js';
import { GLOBAL } from './accounts/repo.js';
import { authenticate } from './auth/authenticate.js';
import { bootstrap, type BootstrapCredentials } from './bootstrap.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { ApiError } from './errors.js';
import { createLogger, type Logger } from './log.js';
import { Store } from './store/db.js';
import { JobScheduler } from './schedule/scheduler.js';
import { Lifecycle, type Participant } from './schedule/lifecycle.js';
import type { Services } from './services.js';
import { createOutboundClient } from './outbound/client.js';
import { IngestRecordSink } from './ingest/record-sink.js';
import type { OutboundClient } from './outbound/types.js';
import { createFetchServices } from './pull/fetch-services.js';
import { checkDownProvider, pullSuspendedProvider } from './pull/attention.js';
import { allRoutes } from './api/routes.js';
import { Router } from './api/http/router.js';
import { dispatch, failure, type DispatchDeps, type DispatchResult } from './api/http/dispatch.js';
import type { RouteMatch } from './api/http/router.js';
import { errorEnvelope, successEnvelope } from './http/envelope.js';
import { readBody, readHead, sendJson, type ResponseState } from './api/http/uws-transport.js';
import { sendWeb } from './api/http/web-reply.js';
import type { SseStream } from './api/http/route.js';
import { PagesRepo } from './catalog/pages.js';
import { PageEvents } from './web/page-events.js';
import { WebAssets } from './web/assets.js';
import { mountSelfMetrics } from './api/system/self-metrics.js';

export interface SluiceOptions {
  config: Config;
  clock?: Clock;
  log?: Logger;
  /** Replaces the outbound client the config would make (tests: a test CA, mapped host names, the guard on). */
  outbound?: OutboundClient;
}

/** A running Sluice node. */
export interface Sluice {
  services: Services;
  router: Router;
  port: number;
  url: string;
  /** Credentials created by this start (first start on an empty data dir), else null. */
  bootstrap: BootstrapCredentials | null;
  /** Stop accepting, finish in-flight requests, close stores. */
  stop(): Promise<void>;
  /** Where the process's memory is now (the benchmarks ask it over IPC, main.ts; docs/self-hosting.md "Memory"). */
  memory(): Promise<MemoryBreakdown>;
}

/** The server's memory by owner, bytes. */
export interface MemoryBreakdown {
  /** The whole process (RSS, split into anonymous and file pages) and the main thread's V8 heap. */
  process: ProcessMemory;
  /** Each pipeline worker thread's V8 heap as its last task ended, and the largest so far. */
  workers: Array<{ thread: number } & Omit<ThreadCounters, 'tasks' | 'records' | 'cpuMs'>>;
  /** DuckDB's buffer manager (the rollups); null when the pipeline is off or DuckDB did not answer. */
  duckdb: DuckDbMemory | null;
  /** The rollups' compaction thread's V8 heap as its last pass ended, and the largest so far; null before a pass. */
  compaction: { usedBytes: number; totalBytes: number; externalBytes: number; peakBytes: number } | null;
}

/** Start a node: open stores, bootstrap if new, mount routes, listen. */
export async function startSluice(opts: SluiceOptions): Promise<Sluice> {
  const { config } = opts;
  mkdirSync(config.dataDir, { recursive: true });
  const log = opts.log ?? createLogger(config.logLevel);
  const clock = opts.clock ?? systemClock;
  const store = new Store(config.dataDir);
  const sources = new SourcesRepo(store, clock);
  const views = new ViewCatalog(store, clock, log, config.dataDir);
  const outbound = opts.outbound ?? createOutboundClient({ allowPrivateTargets: config.allowPrivateTargets });
  // A clock moved by hand (tests) drives time-due runs through `scheduler.runDue()`.
  const scheduler = new JobScheduler({ clock, log, store, dueByTimer: clock === systemClock });
  // Writes are refused as values until the ingest core exists (mountIngest below attaches it).
  const sink = new IngestRecordSink(() => services.config.maxIngestBytes, log);
  const services: Services = {
    config,
    clock,
    log,
    store,
    accounts: new AccountsRepo(store, clock),
    projects: new ProjectsRepo(store, clock),
    activity: new ActivityTracker(store, clock),
    sources,
    ingestKeys: new IngestKeysRepo(store, clock),
    collections: new CollectionsRepo(store, clock, sources),
    collectionDestroyers: [],
    ...createIngestServices(store, clock),
    schema: new SchemaService(store, clock, log, config.dataDir),
    pipeline: null,
    viewBackfill: null,
    viewJoins: null,
    viewGeneration: null,
    views,
    // Registers with the views: a view's live metrics block its deletion and die with it.
    metrics: new MetricCatalog(
      store,
      clock,
      log,
      views,
      seriesLimitsOf(config.maxSeriesPerMetric, config.maxSeriesPerProject),
    ),
    rollups: null,
    lateData: new LateDataFiles(store, clock, views),
    lateRefold: null,
    pages: new PagesRepo(store, clock),
    // Set just below: it registers a job with the scheduler made here.
    pageEvents: null as unknown as PageEvents,
    webAssets: WebAssets.fromBuild(),
    monitors: new MonitorCatalog(store, clock, log),
    monitorRunner: null,
    attention: new AttentionRegistry(log),
    notifier: new Notifier({
      store,
      clock,
      log,
      outbound: () => services.outbound,
      publicUrl: () => services.config.publicUrl,
    }),
    scheduler,
    aggregation: new AggregationService(() => services),
    outbound,
    sink,
    ...createFetchServices({
      store,
      clock,
      log,
      config,
      outbound,
      sink,
      scheduler,
      team: (teamId) => services.accounts.teams.get(GLOBAL, teamId),
      source: (id) => services.sources.byId(id),
    }),
  };
  // page_id on the aggregation (and alert) endpoints: the page's saved custom range (spec: Metrics, "Aggregation query parameters").
  services.aggregation.resolvePagesWith((metric, pageId) => {
    const page = services.pages.get(metric.project_id, pageId);
    if (!page) return undefined;
    return page.custom_range_start_at !== null && page.custom_range_end_at !== null
      ? { start_at: page.custom_range_start_at, end_at: page.custom_range_end_at }
      : null;
  });
  services.pageEvents = new PageEvents({
    pages: services.pages,
    metrics: services.metrics,
    rollups: () => services.rollups,
    intervalMs: config.pageWatchMs,
    scheduler: services.scheduler,
    log,
    monitors: services.monitors,
  });
  services.attention.register(refusalAttention(services.telemetry));
  services.attention.register(pipelineAttention(services));
  services.attention.register(monitorAttention(services.monitors));
  services.attention.register(seriesLimitAttention(services.metrics));
  services.attention.register(checkDownProvider(services.checks.repo));
  services.attention.register(pullSuspendedProvider(services.pulls.repo));
  // Alert events reach the outbox in the transaction that opens or ends the alert.
  services.monitors.events = services.notifier;
  // Every part that starts and stops with the node, in start order; `stop` runs them in reverse, so the
  // store closes last, after the telemetry (which counts what the pipeline drained while stopping).
  const lifecycle = new Lifecycle(log);
  const join = async (participant: Participant) => {
    lifecycle.add(participant);
    await lifecycle.start();
  };
  await join({ name: 'store', stop: () => store.close() });
  await join({ name: 'activity', stop: () => services.activity.flush() });
  await join({ name: 'telemetry', stop: () => services.telemetry.close() });
  await join({ name: 'schema', stop: () => services.schema.close() });
  // In this order: the spool first (it fences off a batch in flight, whose commit then aborts),
  // then the views it feeds (with every view reading them), then the files and schema that batch
  // would have added to.
  services.collectionDestroyers.push(
    (collection) => services.spool.dropCollection(collection.id),
    (collection) => services.views.destroyReading(collection),
    (collection) => services.schema.destroyCollection(collection),
  );
  // Files are named by sequence number: a data directory from before the spool kept its high-water
  // mark must not hand those numbers out again.
  services.spool.reserveThrough(services.schema.highestFileSeq);
  const creds = await bootstrap(services);
  registerPurgeJob(services);
  // One durable scheduler job per active pull and check (they run once the scheduler starts).
  services.pulls.jobs.start();
  services.checks.jobs.start();

  const router = new Router(allRoutes(services));
  const app = App();
  let inFlight = 0;
  let stopping = false;
  let idle: (() => void) | null = null;
  /** Open Server-Sent Events streams of web routes: ended when the server stops. */
  const streams = new Set<SseStream>();
  const finished = () => {
    inFlight--;
    if (inFlight === 0 && idle) idle();
  };
  const deps: DispatchDeps = {
    authenticate: (headers: Record<string, string>) => authenticate(services.accounts, headers),
    team: (teamId: string) => services.accounts.teams.get(GLOBAL, teamId),
    log,
  };

  app.get('/healthz', (res) => {
    const state: ResponseState = { aborted: false, done: false };
    res.onAborted(() => (state.aborted = true));
    if (stopping) sendJson(res, state, 503, errorEnvelope('GET /healthz', new ApiError('service_unavailable')));
    else sendJson(res, state, 200, successEnvelope('GET /healthz', 200, { status: 'ok' }));
  });

  // Prometheus text at GET /metrics (docs/self-metrics.md); the gauges read this server's state.
  const unbindMetrics = mountSelfMetrics(app, services);
  await join({ name: 'self-metrics', stop: () => unbindMetrics() });

  // Exact /ingest routes (HTTP, preflight, WebSocket) win over the control-plane catch-all.
  const ingest = mountIngest(app, services, { stopping: () => stopping });
  sink.attach(ingest.core);

  app.any('/*', (res: HttpResponse, req) => {
    const head = readHead(req);
    const state: ResponseState = { aborted: false, done: false };
    res.onAborted(() => (state.aborted = true));
    const started = performance.now();
    const fallbackEndpoint = `${head.method} ${head.path}`;
    const respond = (r: DispatchResult, endpoint: string, close = false) => {
      if (r.web && !close) sendWeb(res, state, r.status, r.headers, r.web, head.headers, streams);
      else sendJson(res, state, r.status, r.envelope, r.headers, close);
      log.info(
        {
          method: head.method,
          route: endpoint,
          status: r.status,
          duration_ms: Math.round((performance.now() - started) * 100) / 100,
        },
        'request',
      );
      finished();
    };
    // Every failure is answered through `failure` (dispatch.ts), which logs the 5xx ones.
    const fail = (err: unknown, endpoint: string, close = false) =>
      respond(failure(log, head.method, endpoint, err), endpoint, close);
    inFlight++;
    if (stopping) {
      fail(new ApiError('service_unavailable', undefined, { headers: { connection: 'close' } }), fallbackEndpoint);
      return;
    }
    let match: RouteMatch;
    try {
      match = router.match(head.method, head.path);
    } catch (err) {
      fail(err, fallbackEndpoint);
      return;
    }
    const endpoint = match.route.endpoint;
    const limit = match.route.def.maxBodyBytes ?? config.maxBodyBytes;
    readBody(res, state, head, limit, (err, body) => {
      // Refused for its size, after the rest of the body was read (uws-transport.ts): not kept alive.
      if (err) return fail(err, endpoint, true);
      dispatch(deps, match, { ...head, body }).then(
        (r) => respond(r, endpoint),
        (e: unknown) => fail(e, endpoint),
      );
    });
  });

  const listenSocket = await listen(app, config.host, config.port);
  const port = us_socket_local_port(listenSocket as never);
  const hostForUrl = config.host.includes(':') ? `[${config.host}]` : config.host;
  // SLUICE_PORT=0 picks a free port: the default public URL (ingest urls, server_endpoint) must name
  // the port actually bound, or the addresses handed out would not work.
  if (config.port === 0 && config.publicUrl === `http://${hostForUrl}:0`)
    services.config = { ...config, publicUrl: `http://${hostForUrl}:${port}` };
  log.info({ host: config.host, port, data_dir: config.dataDir }, 'listening');
  let rollups: Rollups | null = null;
  if (config.pipeline) {
    rollups = await Rollups.open({
      store,
      dataDir: config.dataDir,
      metrics: services.metrics,
      views,
      spool: services.spool,
      clock,
      log,
      scheduler: services.scheduler,
      mergeDelayMs: config.rollupMergeDelayMs,
      compactRows: config.rollupCompactRows,
      duckdb: { memoryLimitBytes: config.duckdbMemoryBytes, threads: config.duckdbThreads },
    });
    services.rollups = rollups;
    const opened = rollups;
    await join({ name: 'rollups', start: () => opened.start(), stop: () => opened.stop() });
    // The metric backfill's rescan for files a view's own backfill wrote (those are not announced).
    services.scheduler.register(opened.backfill.rescanJob());
    const consumerCtx: ConsumerContext = { services, rollups };
    services.pipeline = new PipelineRunner({
      spool: services.spool,
      collections: {
        byId: (id) => services.collections.byId(id),
        update: (sourceId, id, patch) => services.collections.update(sourceId, id, patch),
      },
      schema: services.schema,
      pool: new WorkerPool(config.workers),
      clock,
      log,
      telemetry: services.telemetry,
      viewTasks: (collectionId) =>
        attachConsumerTasks(OUTPUT_CONSUMERS, consumerCtx, viewTasksFor(services.views, collectionId), collectionId),
      participants: [
        viewCommitParticipant(services.views, clock),
        // Each output consumer's participants (metrics: rollups, then late data), in the order declared.
        ...OUTPUT_CONSUMERS.flatMap((c) => c.participants(consumerCtx)),
        // A batch may settle a schema version an auto view waits for: generation looks (debounced).
        { name: 'view-generation', stage: () => null, applyCommitted: () => services.viewGeneration?.kick() },
      ],
      sweep: () => sweepViewOrphans(services.views, config.dataDir, listDir),
      leaseMaxRecords: config.leaseMaxRecords,
      scheduler: services.scheduler,
    });
    const refold = new LateRefolder({
      late: services.lateData,
      metrics: services.metrics,
      views,
      db: rollups.db,
      pending: rollups.pending,
      clock,
      log,
      merged: () => rollups?.requestCompaction(),
    });
    services.lateRefold = refold;
    await join({ name: 'late-refold', start: () => refold.kick(), stop: () => refold.stop() });
    const pipeline = services.pipeline;
    await join({ name: 'pipeline', start: () => pipeline.start(), stop: () => pipeline.stop() });
    const viewBackfill = new ViewBackfiller({ views: services.views, schema: services.schema, clock, log });
    services.viewBackfill = viewBackfill;
    const viewJoins = new JoinProcessor({ views: services.views, schema: services.schema, clock, log });
    services.viewJoins = viewJoins;
    // Joins start before the backfill so the backfill stops before them (the order shutdown always had).
    await join({ name: 'view-joins', start: () => viewJoins.start(), stop: () => viewJoins.stop() });
    await join({ name: 'view-backfill', start: () => viewBackfill.start(), stop: () => viewBackfill.stop() });
    const viewGeneration = new ViewGenerator({
      views: services.views,
      collection: (id) => services.collections.byId(id),
      versions: (c) => services.schema.listVersions(c),
      clock,
      log,
    });
    services.viewGeneration = viewGeneration;
    await join({ name: 'view-generation', start: () => viewGeneration.start(), stop: () => viewGeneration.stop() });
    // Monitors evaluate through the aggregation service, so only where the rollups run; their jobs are
    // the scheduler's (stopped before them: the scheduler joins after this block).
    const monitorRunner = new MonitorRunner({
      monitors: services.monitors,
      metrics: services.metrics,
      aggregation: services.aggregation,
      scheduler: services.scheduler,
      clock,
      log,
      completeThrough: (metricId) => services.rollups?.completeThrough(metricId) ?? null,
    });
    services.monitorRunner = monitorRunner;
    await join({ name: 'monitors', start: () => monitorRunner.start(), stop: () => monitorRunner.stop() });
    // Deliveries: every second, and at once after a commit that staged some.
    const deliveries = services.scheduler.register({
      name: 'notification-deliveries',
      schedule: { everyMs: 1000 },
      run: () => services.notifier.deliverDue(),
    });
    services.notifier.onStaged = () => deliveries.kick();
  }
  // Stops before the loops above (view generation first, then backfill, joins, pipeline, refold, rollups):
  // a purge pass in progress finishes while the schema store and spool it cleans are still open.
  await join({ name: 'scheduler', start: () => services.scheduler.start(), stop: () => services.scheduler.stop() });
  // Added last so it stops first: nothing new is accepted, and ingest in flight finishes its spool commits
  // and is answered before the sockets close.
  await join({
    name: 'http',
    stop: async () => {
      // In-process producers are refused (service_unavailable) from here on, like new requests.
      sink.detach();
      us_listen_socket_close(listenSocket);
      // Open event streams of pages end now: they would hold no request open, but their clients should hear the end.
      for (const stream of [...streams]) stream.close();
      services.pageEvents.stop();
      if (inFlight > 0) {
        await Promise.race([new Promise<void>((r) => (idle = r)), new Promise((r) => setTimeout(r, 10_000))]);
      }
      await ingest.drain();
      app.close();
    },
  });

  return {
    services,
    router,
    port,
    url: `http://${hostForUrl}:${port}`,
    bootstrap: creds,
    async memory() {
      const threads = services.pipeline?.counters().threads ?? {};
      return {
        process: processMemory(),
        workers: Object.entries(threads).map(([thread, t]) => ({
          thread: Number(thread),
          heapUsedBytes: t.heapUsedBytes,
          heapTotalBytes: t.heapTotalBytes,
          heapExternalBytes: t.heapExternalBytes,
          heapPeakBytes: t.heapPeakBytes,
        })),
        duckdb: rollups === null ? null : await rollups.db.memory().catch(() => null),
        compaction: rollups?.compactionHeap() ?? null,
      };
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      // In reverse start order (see `join` above): http, scheduler, the pipeline's loops (batches in
      // flight commit or are released to replay), rollups, schema, telemetry, activity, the store.
      await lifecycle.stop();
      log.info('stopped');
    },
  };
}

function listen(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (socket) resolve(socket);
      else reject(new Error(`could not listen on ${host}:${port} (in use or not permitted)`));
    });
  });
}
