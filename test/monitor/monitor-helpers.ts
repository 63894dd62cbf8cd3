import assert from 'node:assert/strict';
import type { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';

const OUT = [
  { name: 'path', type: 'string' },
  { name: 'duration', type: 'number' },
];

/** A project with an ingest key, a view of `path`/`duration`, and a metric grouped by path (active). */
export async function liveMetric(srv: TestServer, opts: { groupBy?: string[] } = {}) {
  const fx = await createIngestKey(srv, 'monitors');
  const q = `key=${fx.secret}&collection=requests`;
  // One record makes the collection; it is old enough never to fall in a monitor's window.
  assert.equal(
    (
      await ingest(srv.url, q, ndjson([{ path: '/seed', duration: 1, timestamp: '2020-01-01T00:00:00Z' }]), {
        'content-type': 'application/x-ndjson',
      })
    ).status,
    202,
  );
  assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
  const [collection] = ok(await srv.get(`/v1/projects/${fx.projectId}/collections`));
  const view = ok(
    await srv.post(`/v1/projects/${fx.projectId}/views`, {
      name: 'Requests',
      collection_id: collection.id,
      transform_mode: 'manual',
      output_schema: OUT,
      transform_script: 'function transform(r) { return { path: r.path, duration: r.duration }; }',
    }),
    201,
  );
  const metricsPath = `/v1/projects/${fx.projectId}/metrics`;
  const metric = ok(
    await srv.post(metricsPath, {
      name: 'Latency',
      view_id: view.id,
      group_by: opts.groupBy ?? ['path'],
      value_field: 'duration',
    }),
    201,
  );
  await waitFor(
    async () => ok(await srv.get(`${metricsPath}/${metric.id}`)).status === 'active',
    'the metric becomes active',
  );
  return {
    ...fx,
    metric,
    metricPath: `${metricsPath}/${metric.id}`,
    monitors: `${metricsPath}/${metric.id}/monitors`,
    /** Ingest records and wait until the pipeline has committed them. */
    async send(records: object[]) {
      assert.equal((await ingest(srv.url, q, ndjson(records), { 'content-type': 'application/x-ndjson' })).status, 202);
      assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    },
  };
}

/** Wait (bounded) until the metric's rollups are complete through `at`, at the server's clock. */
export async function completeThrough(srv: TestServer, metricId: string, at: number): Promise<void> {
  await waitFor(
    async () => (srv.sluice.services.rollups!.completeThrough(metricId) ?? 0) >= at,
    `rollups complete through ${new Date(at).toISOString()}`,
  );
}

export async function waitFor(check: () => Promise<boolean> | boolean, what: string, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`timed out waiting: ${what}`);
}
