/**
 * The query benchmark's data: HTTP-request-like traffic records, the view that holds them, and a
 * seeded generator of the view's columns for a time window. Hosts are skewed (a few busy hosts, a
 * long tail) so ranking and folding into `__other__` have something to do; latency is log-normal.
 */
import { mulberry32 } from '../../test/helpers/seeded-random.js';
import type { OutputColumn } from '../../src/transform/output-schema.js';
import type { ViewScript } from '../transform/view-scripts.js';

export const REGIONS = 10;
export const HOSTS = 1000;

/** The view the metrics read: the records' own fields, typed. */
export const TRAFFIC_VIEW: ViewScript = {
  script: `function transform(r, ctx) {
  return { region: r.region, host: r.host, latency: r.latency, user_id: r.user_id, status: r.status };
}`,
  outputSchema: [
    { name: 'region', type: 'string' },
    { name: 'host', type: 'string' },
    { name: 'latency', type: 'number' },
    { name: 'user_id', type: 'string' },
    { name: 'status', type: 'number' },
  ],
};

/** One record's fields (the view's output fields, in schema order). */
export interface TrafficRecord {
  region: string;
  host: string;
  latency: number;
  user_id: string;
  status: number;
}

/** Draws records; `users` is the size of the user-id pool (high cardinality). */
export class TrafficSource {
  private readonly next: () => number;
  private spare: number | null = null;

  constructor(
    seed: number,
    private readonly users: number,
  ) {
    this.next = mulberry32(seed);
  }

  record(): TrafficRecord {
    // u² skews hosts towards low numbers: host-000 is busy, host-999 rare.
    const u = this.next();
    const h = Math.floor(HOSTS * u * u);
    const s = this.next();
    return {
      region: `region-${h % REGIONS}`,
      host: `host-${String(h).padStart(3, '0')}`,
      // Median 80 ms, σ 0.7: a long right tail, as latencies have.
      latency: Math.round(80 * Math.exp(0.7 * this.gaussian()) * 100) / 100,
      user_id: `u${Math.floor(this.next() * this.users)}`,
      status: s < 0.9 ? 200 : s < 0.96 ? 404 : 500,
    };
  }

  /** `n` event times in [from, to), ascending (a file's records arrive in time order). */
  times(n: number, from: number, to: number): Float64Array {
    const ts = new Float64Array(n);
    for (let i = 0; i < n; i++) ts[i] = from + Math.floor(this.next() * (to - from));
    return ts.sort();
  }

  /** Box–Muller, one of each pair kept for the next call. */
  private gaussian(): number {
    if (this.spare !== null) {
      const g = this.spare;
      this.spare = null;
      return g;
    }
    const r = Math.sqrt(-2 * Math.log(1 - this.next()));
    const th = 2 * Math.PI * this.next();
    this.spare = r * Math.sin(th);
    return r * Math.cos(th);
  }
}

/** `n` records as the view's output columns. */
export function trafficColumns(source: TrafficSource, n: number): OutputColumn[] {
  const region: string[] = new Array(n);
  const host: string[] = new Array(n);
  const latency: number[] = new Array(n);
  const user: string[] = new Array(n);
  const status: number[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const r = source.record();
    region[i] = r.region;
    host[i] = r.host;
    latency[i] = r.latency;
    user[i] = r.user_id;
    status[i] = r.status;
  }
  return [
    { name: 'region', type: 'string', values: region },
    { name: 'host', type: 'string', values: host },
    { name: 'latency', type: 'number', values: latency },
    { name: 'user_id', type: 'string', values: user },
    { name: 'status', type: 'number', values: status },
  ];
}

/** `n` records as an NDJSON body, each stamped with `timestamp` (epoch ms, the record's own time). */
export function trafficNdjson(source: TrafficSource, n: number, timestamp: number): Buffer {
  const lines: string[] = new Array(n);
  for (let k = 0; k < n; k++) lines[k] = JSON.stringify({ timestamp, ...source.record() });
  return Buffer.from(lines.join('\n'));
}
