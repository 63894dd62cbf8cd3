import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { startChild, type ChildServer } from '../../test/helpers/child.js';
import { sluiceNodeFlags } from '../sluice-node-flags.js';
import type { ViewScript } from '../transform/view-scripts.js';
import type { PipelineCounters } from '../../src/pipeline/runner.js';
import type { MemoryBreakdown } from '../../src/server.js';

const KEY = 'slk_bench_e2e_bootstrap_key_0000000000000000';

/** The queue as GET /v1/projects/:id/pipeline/live reports it. */
export interface LiveQueue {
  pending: number;
  processing: number;
}

/** How a view creation went: its id, or why there is none (the view stage may not exist yet). */
export type ViewSetup = { ok: true; id: string; status: string } | { ok: false; reason: string };

/** A metric as GET …/metrics/:id shows it (the fields the benches read). */
export interface MetricState {
  id: string;
  status: string;
  backfill_percent: number;
  backfill_started_at: string | null;
  backfill_completed_at: string | null;
  compact_percent: number;
  compact_completed_count: number;
}

/**
 * A real Sluice as a child process (`node dist/src/main.js`: its own event loop and CPU account,
 * not the bench client's) on a fresh temporary data dir, with one project, source, ingest key and
 * collection made through the API. `restart` stops it and starts it again on the same data dir
 * (bench/query writes view files in between).
 */
export class BenchServer {
  /** The last few KB of the server's stderr (why it died, when it does). */
  private stderrTail = '';

  private constructor(
    private child: ChildServer,
    private readonly env: Record<string, string>,
    /** The entry point it runs (undefined: this build's), kept for `restart`. */
    private mainJs: string | undefined,
    /** Its Node options, kept for `restart`. */
    private readonly nodeFlags: readonly string[],
    /** The server's data dir (removed by `stop`). */
    readonly dataDir: string,
    readonly projectId: string,
    readonly collectionId: string,
    /** `/ingest?key=…&collection=…` for the collection. */
    readonly ingestPath: string,
  ) {
    this.watch();
  }

  private watch(): void {
    this.child.proc.stderr!.on(
      'data',
      (d: Buffer) => (this.stderrTail = (this.stderrTail + d.toString('utf8')).slice(-4000)),
    );
  }

  /** null while the server runs; else its exit code or signal and the end of its output (for an error report). */
  deathNote(): string | null {
    const { exitCode, signalCode } = this.child.proc;
    if (exitCode === null && signalCode === null) return null;
    return `the server exited (${exitCode ?? signalCode}); its output ended with:\n${this.child.stdout().slice(-2000)}${this.stderrTail}`;
  }

  /** `mainJs`: another build's entry point (default: this build's); `nodeFlags`: its Node options (default: `npm start`'s). */
  static async start(
    workers: number,
    mainJs?: string,
    nodeFlags: readonly string[] = sluiceNodeFlags(),
  ): Promise<BenchServer> {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-e2e-'));
    const env = {
      SLUICE_DATA_DIR: dataDir,
      SLUICE_BOOTSTRAP_KEY: KEY,
      SLUICE_WORKERS: String(workers),
      SLUICE_LOG_LEVEL: 'warn',
    };
    try {
      const child = await startChild(env, 60_000, nodeFlags, mainJs, true);
      const base = child.url;
      const api = (method: string, path: string, body?: unknown) => call(base, method, path, body);
      const project = await api('POST', '/v1/projects', { name: 'bench' });
      const source = await api('POST', `/v1/projects/${project.id}/sources`, { name: 'bench' });
      const key = await api('POST', `/v1/projects/${project.id}/sources/${source.id}/ingest_keys`, {});
      const collection = await api('POST', `/v1/projects/${project.id}/collections`, {
        name: 'Traffic',
        source_id: source.id,
      });
      const path = `/ingest?key=${encodeURIComponent(key.key)}&collection=${encodeURIComponent(collection.slug)}`;
      return new BenchServer(child, env, mainJs, nodeFlags, dataDir, project.id, collection.id, path);
    } catch (err) {
      rmSync(dataDir, { recursive: true, force: true });
      throw err;
    }
  }

  /** The bootstrap key every call of `api` sends (for a bench that reads whole envelopes itself). */
  get bootstrapKey(): string {
    return KEY;
  }

  get pid(): number {
    return this.child.proc.pid!;
  }

  /** The port it listens on (a restart picks a new one). */
  get port(): number {
    return Number(new URL(this.child.url).port);
  }

  get url(): string {
    return this.child.url;
  }

  /**
   * Stop the server (SIGTERM, clean exit required), run `whileStopped`, start it again on the same
   * data dir — as another build when `mainJs` is given (old and new builds on the same data).
   */
  async restart(whileStopped: (dataDir: string) => Promise<void>, mainJs?: string): Promise<void> {
    this.child.proc.kill('SIGTERM');
    const code = await this.child.exited;
    if (code !== 0) throw new Error(`the server exited with ${code} on SIGTERM: ${this.child.stdout().slice(-2000)}`);
    await whileStopped(this.dataDir);
    if (mainJs !== undefined) this.mainJs = mainJs;
    this.child = await startChild(this.env, 60_000, this.nodeFlags, this.mainJs, true);
    this.watch();
  }

  /** One API call with the bootstrap key: `data` of the envelope, or an error naming the answer. */
  api(method: string, path: string, body?: unknown): Promise<any> {
    return call(this.child.url, method, path, body);
  }

  /** Every item of a list endpoint (`path` without `limit`/`after`), page after page of 200. */
  async list(path: string): Promise<any[]> {
    const out: any[] = [];
    let cursor: string | null = null;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const res = await fetch(
        `${this.child.url}${path}${sep}limit=200${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`,
        { headers: { authorization: `Bearer ${KEY}` } },
      );
      const page = (await res.json()) as { data: any[] | null; pagination: { next_cursor: string | null } | null };
      if (res.status >= 300 || !page.data) throw new Error(`GET ${path}: ${res.status}`);
      out.push(...page.data);
      cursor = page.pagination?.next_cursor ?? null;
    } while (cursor !== null);
    return out;
  }

  /** Where the view's output files are (docs/views.md, "Storage"). */
  viewDir(viewId: string): string {
    return join(this.dataDir, 'views', this.projectId, viewId);
  }

  /** Create a metric (`body`: the create body, docs/metrics.md) and return its id. */
  async createMetric(body: Record<string, unknown>): Promise<string> {
    const m = await this.api('POST', `/v1/projects/${this.projectId}/metrics`, body);
    return m.id;
  }

  async metric(metricId: string): Promise<MetricState> {
    return this.api('GET', `/v1/projects/${this.projectId}/metrics/${metricId}`);
  }

  /** The path (with query) of GET …/aggregation for `params`. */
  aggregationPath(metricId: string, params: Record<string, string>): string {
    return `/v1/projects/${this.projectId}/metrics/${metricId}/aggregation?${new URLSearchParams(params).toString()}`;
  }

  /** A manual view of the collection with `view`'s script; a refusal is reported, not thrown. */
  async createView(view: ViewScript): Promise<ViewSetup> {
    try {
      const v = await this.api('POST', `/v1/projects/${this.projectId}/views`, {
        name: 'bench view',
        collection_id: this.collectionId,
        transform_mode: 'manual',
        transform_script: view.script,
        output_schema: view.outputSchema,
      });
      return { ok: true, id: v.id, status: v.status };
    } catch (err) {
      return { ok: false, reason: (err as Error).message };
    }
  }

  /** Records the view's files hold, as far as one page of GET …/records shows (0, or ≥ 1). */
  async viewHasRecords(viewId: string): Promise<boolean> {
    const page = (await this.api('GET', `/v1/projects/${this.projectId}/views/${viewId}/records?limit=1`)) as unknown[];
    return page.length > 0;
  }

  async view(viewId: string): Promise<{ status: string; error_message: string | null }> {
    return this.api('GET', `/v1/projects/${this.projectId}/views/${viewId}`);
  }

  async queue(): Promise<LiveQueue> {
    const live = await this.api('GET', `/v1/projects/${this.projectId}/pipeline/live`);
    return { pending: live.pending_records, processing: live.processing_records };
  }

  /** Rows counted in the collection's schema versions, and how many versions there are. */
  async versions(): Promise<{ rows: number; versions: number }> {
    let rows = 0;
    let versions = 0;
    let after: string | null = null;
    do {
      const res = await fetch(
        `${this.child.url}/v1/projects/${this.projectId}/collections/${this.collectionId}/schemas?limit=100${after ? `&after=${after}` : ''}`,
        { headers: { authorization: `Bearer ${KEY}` } },
      );
      const json = (await res.json()) as { data: { row_count: number }[]; pagination: { next_cursor: string | null } };
      for (const v of json.data) rows += v.row_count;
      versions += json.data.length;
      after = json.pagination.next_cursor;
    } while (after !== null);
    return { rows, versions };
  }

  /**
   * Rows in the collection's Parquet files, counted by DuckDB from the data dir (the files are
   * what the records must reach; the API has no row total of its own).
   */
  async fileRows(): Promise<number> {
    const dir = join(this.dataDir, 'files', this.projectId, this.collectionId);
    const db = await DuckDBInstance.create(':memory:', { threads: '1' });
    try {
      const conn = await db.connect();
      const reader = await conn.runAndReadAll(
        `SELECT count(*)::BIGINT AS n FROM read_parquet('${dir.replaceAll("'", "''")}/**/*.parquet', union_by_name = true)`,
      );
      conn.closeSync();
      return Number(reader.getRowObjects()[0]!.n);
    } finally {
      db.closeSync();
    }
  }

  /** Rows the schema report counts as stored without a version (`unclassified.rows`). */
  async unclassifiedRows(): Promise<number> {
    const report = await this.api(
      'GET',
      `/v1/projects/${this.projectId}/collections/${this.collectionId}/schema_report`,
    );
    return report.unclassified.rows;
  }

  /** Spool entries the pipeline set aside for the collection (they would not be in files). */
  async setAside(): Promise<number> {
    const page = (await this.api(
      'GET',
      `/v1/projects/${this.projectId}/collections/${this.collectionId}/unprocessable?limit=100`,
    )) as unknown[];
    return page.length;
  }

  /** CPU seconds (user + system, every thread) the server has used so far, from /proc. */
  cpuSeconds(): number {
    return statCpuSeconds(`/proc/${this.pid}/stat`);
  }

  /**
   * CPU seconds of each child process of the server alive now, by pid: the view sandboxes (one per
   * worker thread that ran a view, src/transform/sandbox-process.ts), whose CPU is not the server's.
   */
  childCpuSeconds(): Map<number, number> {
    const out = new Map<number, number>();
    for (const d of readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      } catch {
        continue; // ended meanwhile
      }
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === this.pid) out.set(Number(d), (Number(fields[11]) + Number(fields[12])) / 100);
    }
    return out;
  }

  /**
   * CPU seconds of the main thread alone (the event loop: HTTP, spool commits, the pipeline's
   * planning and commits). Near 1 s per second of run, it is the bottleneck, whatever the workers do.
   */
  mainThreadCpuSeconds(): number {
    return statCpuSeconds(`/proc/${this.pid}/task/${this.pid}/stat`);
  }

  /**
   * CPU seconds of each thread of the server by thread id (/proc/<pid>/task): the main thread, the
   * pipeline's worker threads, and V8's and libuv's helpers (GC, LMDB writes), which the bench
   * tells apart by how busy they were (Node 20 does not name its threads).
   */
  threadCpuSeconds(): Map<number, number> {
    const out = new Map<number, number>();
    for (const t of readdirSync(`/proc/${this.pid}/task`)) {
      try {
        out.set(Number(t), statCpuSeconds(`/proc/${this.pid}/task/${t}/stat`));
      } catch {
        // ended meanwhile
      }
    }
    return out;
  }

  /**
   * The pipeline runner's counters (src/pipeline/runner.ts), asked over the IPC channel; null from
   * a build that does not answer (an older baseline) within a second.
   */
  pipelineCounters(): Promise<PipelineCounters | null> {
    const proc = this.child.proc;
    return new Promise((resolve) => {
      const done = (c: PipelineCounters | null) => {
        clearTimeout(timer);
        proc.off('message', onMessage);
        resolve(c);
      };
      const onMessage = (m: { type?: string; counters?: PipelineCounters | null }) => {
        if (m?.type === 'sluice:pipeline-counters') done(m.counters ?? null);
      };
      const timer = setTimeout(() => done(null), 1000);
      proc.on('message', onMessage);
      proc.send({ type: 'sluice:pipeline-counters' });
    });
  }

  /**
   * Where the server's memory is (src/server.ts `MemoryBreakdown`), asked over the IPC channel; null
   * from a build that does not answer (an older baseline) within a second.
   */
  memory(): Promise<MemoryBreakdown | null> {
    const proc = this.child.proc;
    return new Promise((resolve) => {
      const done = (m: MemoryBreakdown | null) => {
        clearTimeout(timer);
        proc.off('message', onMessage);
        resolve(m);
      };
      const onMessage = (m: { type?: string; memory?: MemoryBreakdown | null }) => {
        if (m?.type === 'sluice:memory') done(m.memory ?? null);
      };
      const timer = setTimeout(() => done(null), 1000);
      proc.on('message', onMessage);
      try {
        proc.send({ type: 'sluice:memory' });
      } catch {
        done(null); // the server is gone
      }
    });
  }

  /** Resident memory of the server, MB. */
  rssMb(): number {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  }

  async stop(): Promise<void> {
    this.child.proc.kill('SIGTERM');
    await this.child.exited;
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** utime + stime of a /proc stat file, in seconds (USER_HZ is 100 on Linux). */
function statCpuSeconds(path: string): number {
  const stat = readFileSync(path, 'utf8');
  // Fields after the parenthesised command name: utime is field 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** One API call with the bootstrap key; `data` of the envelope, or an error naming the answer. */
async function call(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let json: { data?: unknown; error?: { code: string; message: string } | null };
  try {
    json = JSON.parse(text) as typeof json;
  } catch {
    throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
  }
  if (res.status >= 300)
    throw new Error(
      `${method} ${path}: ${res.status} ${json.error?.code ?? ''} ${json.error?.message ?? text.slice(0, 200)}`,
    );
  return json.data;
}
