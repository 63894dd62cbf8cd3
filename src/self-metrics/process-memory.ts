import { readFileSync } from 'node:fs';

/**
 * The process's memory as the kernel and V8 see it (bytes), for the server's memory breakdown
 * (docs/self-hosting.md, "Memory"): `rss` split into anonymous memory (heaps: V8's, malloc's,
 * DuckDB's) and file pages (the LMDB map, the binaries; the kernel can drop these), and the main
 * thread's V8 heap. `rssAnon`/`rssFile` are null where /proc is not there (not Linux).
 */
export interface ProcessMemory {
  rss: number;
  rssAnon: number | null;
  rssFile: number | null;
  heapUsed: number;
  heapTotal: number;
  /** Memory V8 knows of outside its heap (array buffers, Buffers, native objects it was told of). */
  external: number;
  arrayBuffers: number;
}

export function processMemory(): ProcessMemory {
  const m = process.memoryUsage();
  let rss = m.rss;
  let rssAnon: number | null = null;
  let rssFile: number | null = null;
  try {
    // RSS and its parts from the same read, so they add up (VmRSS = RssAnon + RssFile + RssShmem).
    const status = readFileSync('/proc/self/status', 'utf8');
    rss = kb(status, 'VmRSS') ?? rss;
    rssAnon = kb(status, 'RssAnon');
    rssFile = kb(status, 'RssFile');
  } catch {
    // Not Linux: the split is unknown.
  }
  return {
    rss,
    rssAnon,
    rssFile,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
  };
}

function kb(status: string, field: string): number | null {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return m ? Number(m[1]) * 1024 : null;
}
