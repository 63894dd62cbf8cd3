/**
 * Ingest → counted: an open-loop sender posts records stamped with their send time while a poller
 * reads the metric's last hour by minute (`coverage_mode=observed`, count) every ~50 ms. A request
 * is counted at the first poll whose count in its minute, less what was there before, reaches the
 * records of every request of that minute acknowledged up to it (the spool commits, and the
 * pipeline takes, records in acknowledgement order); its lag is that poll's arrival − its 202.
 * Resolution: the poll period plus one aggregation request.
 */
import { openLoopLoad, type OpenLoopResult } from '../ingest/open-loop.js';
import { countFrom, type AggregationAnswer } from './aggregation.js';
import type { BenchServer } from '../e2e/sluice-server.js';
import { trafficNdjson, type TrafficSource } from './traffic.js';

export interface LagPlan {
  server: BenchServer;
  metricId: string;
  /** Offered records per second. */
  rate: number;
  /** Records per request. */
  batch: number;
  seconds: number;
  pollMs: number;
  /** time_range of the poll (by minute): `last_hour`, or `last_24_hours` as a dashboard asks it. */
  pollRange: string;
  source: TrafficSource;
  /** After the last 202, how long uncounted records are waited for. */
  settleMs: number;
}

export interface LagResult {
  load: OpenLoopResult;
  /** One per acknowledged request, ms (Infinity: never counted). */
  lags: Float64Array;
  polls: number;
  /** Poll latency, ms. */
  pollMs: Float64Array;
}

interface Sent {
  minute: number;
  records: number;
  ackAt: number;
}

interface Poll {
  at: number;
  counts: Map<number, number>;
}

const MINUTE = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function measureLag(plan: LagPlan): Promise<LagResult> {
  const { server } = plan;
  const path = server.aggregationPath(plan.metricId, {
    time_range: plan.pollRange,
    interval: 'minute',
    values: 'count',
    coverage_mode: 'observed',
    timezone: 'UTC',
  });
  const startMinute = Math.floor(Date.now() / MINUTE) * MINUTE;
  const read = async () => countFrom((await server.api('GET', path)) as AggregationAnswer, startMinute);
  const baseline = await read();
  const sent: (Sent | undefined)[] = [];
  const pending = new Map<number, { minute: number; records: number }>();
  const polls: Poll[] = [];
  const pollMs: number[] = [];
  let sending = true;
  let lastAck = 0;
  const poller = (async () => {
    for (;;) {
      const t0 = performance.now();
      const counts = await read();
      const at = performance.now();
      pollMs.push(at - t0);
      polls.push({ at, counts });
      if (!sending && (allCounted(sent, counts, baseline) || at - lastAck > plan.settleMs)) return;
      await sleep(Math.max(0, plan.pollMs - (at - t0)));
    }
  })();
  let load: OpenLoopResult;
  try {
    load = await openLoopLoad({
      port: server.port,
      path: server.ingestPath,
      body: Buffer.alloc(0),
      bodyAt: (i) => {
        const now = Date.now();
        pending.set(i, { minute: Math.floor(now / MINUTE) * MINUTE, records: plan.batch });
        return trafficNdjson(plan.source, plan.batch, now);
      },
      onAnswer: (i, status, at) => {
        const p = pending.get(i);
        pending.delete(i);
        if (status !== 202 || !p) return;
        sent[i] = { ...p, ackAt: at };
        lastAck = at;
      },
      contentType: 'application/x-ndjson',
      rate: plan.rate / plan.batch,
      connections: 64,
      durationMs: plan.seconds * 1000,
    });
  } finally {
    sending = false;
  }
  await poller;
  return {
    load,
    lags: lagsOf(
      sent.filter((s): s is Sent => s !== undefined),
      polls,
      baseline,
    ),
    polls: polls.length,
    pollMs: Float64Array.from(pollMs),
  };
}

function allCounted(
  sent: readonly (Sent | undefined)[],
  counts: Map<number, number>,
  baseline: Map<number, number>,
): boolean {
  const want = new Map<number, number>();
  for (const s of sent) if (s) want.set(s.minute, (want.get(s.minute) ?? 0) + s.records);
  for (const [minute, n] of want) if ((counts.get(minute) ?? 0) - (baseline.get(minute) ?? 0) < n) return false;
  return true;
}

/** Per request (in acknowledgement order within its minute): first poll that covers it − its 202. */
function lagsOf(sent: Sent[], polls: readonly Poll[], baseline: Map<number, number>): Float64Array {
  const byMinute = new Map<number, Sent[]>();
  for (const s of sent) {
    let list = byMinute.get(s.minute);
    if (!list) byMinute.set(s.minute, (list = []));
    list.push(s);
  }
  const lags: number[] = [];
  for (const [minute, list] of byMinute) {
    list.sort((a, b) => a.ackAt - b.ackAt);
    let need = 0;
    let p = 0;
    for (const s of list) {
      need += s.records;
      while (p < polls.length && (polls[p]!.counts.get(minute) ?? 0) - (baseline.get(minute) ?? 0) < need) p++;
      lags.push(p < polls.length ? Math.max(0, polls[p]!.at - s.ackAt) : Infinity);
    }
  }
  return Float64Array.from(lags);
}
