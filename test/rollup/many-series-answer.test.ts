import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { ingestProject, settle } from './rollup-helpers.js';

/**
 * docs/metrics.md, "Series": a `max_series` answer ranks by walking the registry's ranked order
 * (not every series with data), keeps the scan of its sealed buckets, and caches the merged tail of
 * `__other__` per bucket under the kept series. Each must follow the data: a new series entering the
 * top, a tail series whose `last_value` overtakes the kept ones, and a write into the open bucket
 * all change the next answer.
 */

const MIN = 60_000;
const NOW = Date.parse('2026-05-04T12:00:30Z');
const SERIES = 40;

test('max_series answers follow the data: a series entering the top, a new last_value, a write into the open bucket', async (t) => {
  const srv = await TestServer.start({ clock: new ManualClock(NOW) });
  t.after(() => srv.stop());
  const { project, send } = await ingestProject(srv, 'many series', 'events');
  ok(await srv.post(project, { late_data_window_minutes: 1440 }));
  await send([{ g: 'g00', n: 0, u: 'u0' }]);
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const [collection] = ok(await srv.get(`${project}/collections`));
  const view = ok(
    await srv.post(`${project}/views`, {
      name: 'Events',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: 'function transform(r) { return { g: r.g, n: r.n, u: r.u }; }',
      output_schema: [
        { name: 'g', type: 'string' },
        { name: 'n', type: 'number' },
        { name: 'u', type: 'string' },
      ],
    }),
    201,
  );
  for (let i = 0; i < 200 && ok(await srv.get(`${project}/views/${view.id}/records`)).length === 0; i++)
    await new Promise((r) => setTimeout(r, 50));
  const metrics = `${project}/metrics`;
  const metric = ok(
    await srv.post(metrics, { name: 'Events', view_id: view.id, group_by: ['g'], value_field: 'n', unique_field: 'u' }),
    201,
  );
  await settle(srv, metrics, [metric.id]);
  const at = (ms: number) => new Date(ms).toISOString();
  const label = (i: number) => `g${String(i).padStart(2, '0')}`;
  // 40 series over the last 30 minutes; series i's last value is i (its records in time order).
  const records: Array<{ g: string; n: number; u: string; timestamp: string }> = [];
  for (let m = 30; m >= 1; m--)
    for (let i = 0; i < SERIES; i++)
      if ((i + m) % 3 === 0 || m === 1)
        records.push({ g: label(i), n: i, u: `u${(i * 7 + m) % 50}`, timestamp: at(NOW - m * MIN) });
  await send(records);
  await settle(srv, metrics, [metric.id]);

  const path = (values: string) =>
    `${metrics}/${metric.id}/aggregation?time_range=last_hour&interval=minute&values=${values}&max_series=5&coverage_mode=observed&timezone=UTC`;
  const labels = (a: any) => a.series.map((s: any) => s.details.label);
  const sumOf = (s: any) => Object.values(s.records as Record<string, number[]>).reduce((x, v) => x + (v[0] ?? 0), 0);
  const check = (a: any, kept: string[], total: number, records: number) => {
    assert.deepEqual(labels(a), [...kept, 'Other']);
    assert.equal(a.series_total, total);
    assert.equal(
      a.series.reduce((x: number, s: any) => x + sumOf(s), 0),
      records,
      'the kept series and __other__ count every record',
    );
  };
  let count = records.length + 1; // and the first record, at the time of sending
  for (let i = 0; i < 2; i++)
    check(ok(await srv.get(path('count'))), ['g39', 'g38', 'g37', 'g36', 'g35'], SERIES, count);
  const distinct = async (kept: string[]) => {
    const a = ok(await srv.get(path('count_unique')));
    assert.deepEqual(labels(a), [...kept, 'Other']);
    const other = a.series.at(-1);
    return other.records[at(NOW - MIN - (NOW % MIN))]?.[0] as number;
  };
  const top = ['g39', 'g38', 'g37', 'g36', 'g35'];
  const before = await distinct(top);
  assert.equal(await distinct(top), before, 'a repeated answer gives the same merged tail');

  // A new series with the highest value enters the top; one of the tail overtakes the others.
  await send([
    { g: 'new', n: 1000, u: 'u0', timestamp: at(NOW - 20_000) },
    { g: label(3), n: 500, u: 'u0', timestamp: at(NOW - 20_000) },
  ]);
  await settle(srv, metrics, [metric.id]);
  count += 2;
  check(ok(await srv.get(path('count'))), ['new', 'g03', 'g39', 'g38', 'g37'], SERIES + 1, count);

  // A write into the open bucket (the minute before now) of a tail series, with a user id never seen:
  // the cached union of that bucket's tail is no longer current.
  const moved = ['new', 'g03', 'g39', 'g38', 'g37'];
  const afterRanking = await distinct(moved);
  await send([{ g: label(0), n: 0, u: 'someone-new', timestamp: at(NOW - MIN) }]);
  await settle(srv, metrics, [metric.id]);
  assert.equal(await distinct(moved), afterRanking + 1, 'the open bucket’s __other__ counts the new user');
  check(ok(await srv.get(path('count'))), ['new', 'g03', 'g39', 'g38', 'g37'], SERIES + 1, count + 1);
});
