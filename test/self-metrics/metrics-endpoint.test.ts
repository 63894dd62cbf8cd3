import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { TestServer } from '../helpers/server.js';
import { scopedToken } from '../catalog/helpers.js';
import { createIngestKey, ingest, ndjson } from '../ingest/helpers.js';

/** `name{labels}` → value, from the Prometheus text exposition. */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function scrape(
  srv: TestServer,
  token: string | null = undefined as never,
): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${srv.url}/metrics`, {
    headers: token === null ? {} : { authorization: `Bearer ${token ?? 'slk_test_bootstrap_key_0000000000000000000'}` },
  });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

test('GET /metrics: a key with servers:read, else 401/403 in the envelope; public with SLUICE_METRICS_PUBLIC=1', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const none = await scrape(srv, null);
  assert.equal(none.status, 401);
  assert.equal(JSON.parse(none.text).error.code, 'auth_missing_credentials');
  const weak = await scrape(srv, await scopedToken(srv, { projects: ['read'] }));
  assert.equal(weak.status, 403);
  assert.match(JSON.parse(weak.text).error.message, /servers:read/);
  const good = await scrape(srv, await scopedToken(srv, { servers: ['read'] }));
  assert.equal(good.status, 200);
  assert.match(good.type ?? '', /^text\/plain; version=0\.0\.4/);
  assert.match(good.text, /# TYPE sluice_ingest_requests_total counter/);
  const json = await fetch(`${srv.url}/metrics?format=json`, {
    headers: { authorization: 'Bearer slk_test_bootstrap_key_0000000000000000000' },
  });
  assert.equal(json.status, 200);
  const { samples: list } = (await json.json()) as {
    samples: { name: string; type: string; labels: Record<string, unknown>; value: number }[];
  };
  assert.ok(list.some((x) => x.name === 'sluice_spool_records' && x.type === 'gauge' && x.value === 0));
  assert.ok(list.some((x) => x.name === 'sluice_monitor_evaluation_lag_seconds_count' && x.type === 'histogram'));
  const bad = await fetch(`${srv.url}/metrics?format=xml`, {
    headers: { authorization: 'Bearer slk_test_bootstrap_key_0000000000000000000' },
  });
  assert.equal(bad.status, 400);
  assert.equal(
    ((await bad.json()) as { error: { details: { field: string }[] } }).error.details[0]!.field,
    'query.format',
  );

  const pub = await TestServer.start({ env: { SLUICE_PIPELINE: '0', SLUICE_METRICS_PUBLIC: '1' } });
  t.after(() => pub.stop());
  assert.equal((await scrape(pub, null)).status, 200);
});

test('GET /metrics: ingest by outcome and reason, spool depth and pipeline lag, process metrics, Prometheus names', async (t) => {
  const clock = new ManualClock(Date.parse('2026-03-01T10:00:00Z'));
  const srv = await TestServer.start({ clock, env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const fx = await createIngestKey(srv);
  const before = samples((await scrape(srv)).text);
  const at = (m: Map<string, number>, k: string) => m.get(k) ?? 0;
  assert.equal(
    (
      await ingest(srv.url, `key=${fx.secret}&collection=a`, ndjson([{ a: 1 }, { a: 2 }, { a: 3 }]), {
        'content-type': 'application/x-ndjson',
      })
    ).status,
    202,
  );
  assert.equal(
    (
      await ingest(srv.url, `key=${fx.secret}&collection=a`, '{"a":1}\nnot json\n', {
        'content-type': 'application/x-ndjson',
      })
    ).status,
    400,
  );
  assert.equal((await ingest(srv.url, `key=pik_nope&collection=a`, '{"a":1}')).status, 401);
  clock.advance(30_000);
  const r = await scrape(srv);
  const after = samples(r.text);
  assert.equal(
    at(after, 'sluice_ingest_requests_total{outcome="accepted"}') -
      at(before, 'sluice_ingest_requests_total{outcome="accepted"}'),
    1,
  );
  assert.equal(
    at(after, 'sluice_ingest_records_total{outcome="accepted"}') -
      at(before, 'sluice_ingest_records_total{outcome="accepted"}'),
    3,
  );
  assert.equal(
    at(after, 'sluice_ingest_requests_total{outcome="refused",reason="frame_invalid"}') -
      at(before, 'sluice_ingest_requests_total{outcome="refused",reason="frame_invalid"}'),
    1,
  );
  assert.equal(
    at(after, 'sluice_ingest_requests_total{outcome="refused",reason="auth_invalid_credentials"}') -
      at(before, 'sluice_ingest_requests_total{outcome="refused",reason="auth_invalid_credentials"}'),
    1,
  );
  assert.equal(after.get('sluice_spool_records'), 3);
  assert.ok(after.get('sluice_spool_bytes')! > 0);
  assert.equal(after.get('sluice_pipeline_lag_seconds'), 30, 'the oldest spooled entry is 30 s old');
  for (const name of ['nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'process_resident_memory_bytes'])
    assert.ok(after.has(name), name);
  assert.match(r.text, /# TYPE nodejs_gc_duration_seconds histogram/);
  // Conventions: counters end in _total; every sluice_ family has a unit or is a count/ratio.
  for (const m of r.text.matchAll(/^# TYPE (sluice_\w+) (\w+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    if (type === 'counter') assert.match(name, /_total$/, name);
    else assert.match(name, /_(seconds|bytes|records|rows|batches|ratio|threads)$/, name);
  }
});

test('GET /metrics: pipeline batches by outcome and stage durations once records are processed', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  t.after(() => srv.stop());
  const fx = await createIngestKey(srv);
  const before = samples((await scrape(srv)).text);
  assert.equal(
    (
      await ingest(srv.url, `key=${fx.secret}&collection=a`, ndjson([{ a: 1 }, { a: 2 }]), {
        'content-type': 'application/x-ndjson',
      })
    ).status,
    202,
  );
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const started = performance.now();
  const after = samples((await scrape(srv)).text);
  const ms = performance.now() - started;
  const d = (k: string) => (after.get(k) ?? 0) - (before.get(k) ?? 0);
  assert.ok(d('sluice_pipeline_batches_total{outcome="committed"}') >= 1);
  assert.equal(d('sluice_pipeline_records_total'), 2);
  assert.ok(d('sluice_pipeline_batch_duration_seconds_count{stage="total"}') >= 1);
  assert.equal(after.get('sluice_spool_records'), 0);
  assert.equal(after.get('sluice_pipeline_lag_seconds'), 0);
  assert.equal(after.get('sluice_worker_threads'), 1);
  assert.ok(ms < 1000, `a scrape is cheap (${ms.toFixed(1)} ms here, on a loaded test machine)`);
});
