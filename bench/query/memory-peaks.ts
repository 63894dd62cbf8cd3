/**
 * Where a bench server's memory went (issue 22, item 3): its memory breakdown (src/server.ts
 * `MemoryBreakdown`, asked over IPC) sampled every `everyMs` while a scenario runs, each part's peak
 * kept: the main thread's V8 heap (committed), memory V8 knows of outside it (array buffers…), the
 * pipeline workers' and the compaction thread's heaps (summed), DuckDB's buffer manager, and RSS split into anonymous and file
 * pages at the sample where RSS was highest. What is left of the anonymous pages is native memory
 * nobody accounts for (malloc arenas, DuckDB outside its buffer manager, parquet-wasm's memories).
 * A build that does not answer (an older baseline) leaves every part null.
 */
import type { BenchServer } from '../e2e/sluice-server.js';
import type { MemoryBreakdown } from '../../src/server.js';

/** Peaks over a run, MB (null: the server never answered). */
export interface MemoryPeaks {
  mainHeapMb: number | null;
  externalMb: number | null;
  workerHeapsMb: number | null;
  duckdbMb: number | null;
  /** At the sample with the highest RSS: anonymous and file pages, and the part no counter explains. */
  anonAtPeakMb: number | null;
  fileAtPeakMb: number | null;
  unaccountedAtPeakMb: number | null;
}

const MB = 1024 * 1024;
const mb = (b: number) => Math.round(b / MB);

export class MemorySampler {
  private running = false;
  private loop: Promise<void> | null = null;
  private answered = false;
  private mainHeap = 0;
  private external = 0;
  private workerHeaps = 0;
  private duckdb = 0;
  private rssAtPeak = -1;
  private atPeak: { anon: number; file: number; unaccounted: number } | null = null;

  constructor(
    private readonly server: BenchServer,
    private readonly everyMs = 500,
  ) {}

  start(): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        const m = await this.server.memory().catch(() => null);
        if (m !== null) this.take(m);
        await new Promise((r) => setTimeout(r, this.everyMs));
      }
    })();
  }

  private take(m: MemoryBreakdown): void {
    this.answered = true;
    const p = m.process;
    // The pipeline's worker threads and the rollups' compaction thread (absent from older builds).
    const compaction = m.compaction ? m.compaction.totalBytes + m.compaction.externalBytes : 0;
    const workers =
      m.workers.reduce((a, w) => a + (w.heapTotalBytes ?? 0) + (w.heapExternalBytes ?? 0), 0) + compaction;
    this.mainHeap = Math.max(this.mainHeap, p.heapTotal);
    this.external = Math.max(this.external, p.external);
    this.workerHeaps = Math.max(this.workerHeaps, workers);
    this.duckdb = Math.max(this.duckdb, m.duckdb?.bytes ?? 0);
    if (p.rss > this.rssAtPeak && p.rssAnon !== null && p.rssFile !== null) {
      this.rssAtPeak = p.rss;
      const known = p.heapTotal + p.external + workers + (m.duckdb?.bytes ?? 0);
      this.atPeak = { anon: p.rssAnon, file: p.rssFile, unaccounted: Math.max(0, p.rssAnon - known) };
    }
  }

  async stop(): Promise<MemoryPeaks> {
    this.running = false;
    await this.loop;
    const on = (v: number) => (this.answered ? mb(v) : null);
    return {
      mainHeapMb: on(this.mainHeap),
      externalMb: on(this.external),
      workerHeapsMb: on(this.workerHeaps),
      duckdbMb: on(this.duckdb),
      anonAtPeakMb: this.atPeak ? mb(this.atPeak.anon) : null,
      fileAtPeakMb: this.atPeak ? mb(this.atPeak.file) : null,
      unaccountedAtPeakMb: this.atPeak ? mb(this.atPeak.unaccounted) : null,
    };
  }
}

/** The peaks as table columns (blank where the server did not answer). */
export function memoryColumns(p: MemoryPeaks | null): Record<string, number | string> {
  const v = (x: number | null | undefined) => x ?? '';
  return {
    'main heap MB': v(p?.mainHeapMb),
    'external MB': v(p?.externalMb),
    'worker heaps MB': v(p?.workerHeapsMb),
    'DuckDB MB': v(p?.duckdbMb),
    'anon / file MB at peak': p?.anonAtPeakMb == null ? '' : `${p.anonAtPeakMb} / ${p.fileAtPeakMb}`,
    'unaccounted MB at peak': v(p?.unaccountedAtPeakMb),
  };
}
