import assert from 'node:assert/strict';
import type { Rollups } from '../../src/rollup/rollups.js';
import { TOTAL_SERIES, type Tier } from '../../src/rollup/rollup-types.js';
import type { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';

/** The server's rollups (services.rollups is the Rollups service when the pipeline runs). */
export function rollupsOf(srv: TestServer): Rollups {
  return srv.sluice.services.rollups as Rollups;
}

/** Wait (bounded) until the pipeline, the view backfill and the rollups have nothing left, and the metric is active. */
export async function settle(
  srv: TestServer,
  metricsPath: string,
  metricIds: string[],
  timeoutMs = 60_000,
): Promise<void> {
  const s = srv.sluice.services;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    assert.ok(await s.pipeline!.idle(timeoutMs), 'the pipeline drains');
    await s.viewBackfill!.idle();
    await rollupsOf(srv).idle();
    const ms = await Promise.all(metricIds.map(async (id) => ok(await srv.get(`${metricsPath}/${id}`))));
    for (const m of ms) assert.notEqual(m.status, 'error', JSON.stringify(m));
    if (
      ms.every((m) => m.status === 'active' && m.backfill_completed_count === m.backfill_total_count) &&
      s.spool.pendingRecords() === 0
    ) {
      await rollupsOf(srv).idle();
      return;
    }
    if (Date.now() > deadline)
      throw new Error(
        `rollups did not settle: ${JSON.stringify(ms.map((m) => [m.id, m.status, m.backfill_completed_count, m.backfill_total_count]))}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** series → bucket start → [count, sum] read through the RollupReader. */
export async function countsAndSums(
  srv: TestServer,
  metricId: string,
  revision: number,
  tier: Tier,
  series: string[] | null = [TOTAL_SERIES],
): Promise<Map<string, Map<number, [number, number | null]>>> {
  const rows = await rollupsOf(srv).read({
    metricId,
    revision,
    tier,
    from: 0,
    to: Date.UTC(2100, 0, 1),
    series,
    sketches: false,
  });
  const out = new Map<string, Map<number, [number, number | null]>>();
  for (const r of rows) {
    if (!out.has(r.series)) out.set(r.series, new Map());
    out.get(r.series)!.set(r.start, [r.count, r.sum]);
  }
  return out;
}

/** A project with an ingest key, and `send` posting NDJSON records into `collection` (asserts the 202). */
export async function ingestProject(srv: TestServer, name: string, collection: string) {
  const fx = await createIngestKey(srv, name);
  const q = `key=${fx.secret}&collection=${collection}`;
  const project = `/v1/projects/${fx.projectId}`;
  const send = async (recs: object[]) =>
    assert.equal((await ingest(srv.url, q, ndjson(recs), { 'content-type': 'application/x-ndjson' })).status, 202);
  return { fx, project, send };
}
