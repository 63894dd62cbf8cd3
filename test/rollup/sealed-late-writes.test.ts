import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { ingestProject, rollupsOf, settle } from './rollup-helpers.js';

/**
 * docs/metrics.md, "Sealed buckets", with the project's late window open (a day): records of the
 * past hours are counted live into buckets already answered and cached. Each such write drops the
 * cached buckets holding its minutes — the next answer shows the record, and the buckets before it
 * still come from memory; a rebuilding update (a new revision) and a delete drop everything. Every
 * answer is checked against one computed without the cache (`last` in the values keeps an answer
 * out of it).
 */

const MIN = 60_000;
const HOUR = 60 * MIN;
const NOW = Date.parse('2026-05-04T12:00:30Z');

test('sealed buckets with an open late window: a late record, a rebuild and a delete are seen by the next answer, and only the buckets a write touched are read again', async (t) => {
  const srv = await TestServer.start({ clock: new ManualClock(NOW) });
  t.after(() => srv.stop());
  const { project, send } = await ingestProject(srv, 'late writes', 'events');
  ok(await srv.post(project, { late_data_window_minutes: 1440 }));
  await send([{ g: 'a', n: 1 }]);
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const [collection] = ok(await srv.get(`${project}/collections`));
  const view = ok(
    await srv.post(`${project}/views`, {
      name: 'Events',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script: 'function transform(r) { return { g: r.g, n: r.n }; }',
      output_schema: [
        { name: 'g', type: 'string' },
        { name: 'n', type: 'number' },
      ],
    }),
    201,
  );
  for (let i = 0; i < 200 && ok(await srv.get(`${project}/views/${view.id}/records`)).length === 0; i++)
    await new Promise((r) => setTimeout(r, 50));
  const metrics = `${project}/metrics`;
  const metric = ok(
    await srv.post(metrics, { name: 'Events', view_id: view.id, group_by: ['g'], value_field: 'n' }),
    201,
  );
  await settle(srv, metrics, [metric.id]);
  // Six hours of history, counted live (inside the late window), two series.
  const at = (ms: number) => new Date(ms).toISOString();
  await send(
    Array.from({ length: 360 }, (_, i) => ({
      g: i % 2 ? 'a' : 'b',
      n: i % 10,
      timestamp: at(NOW - 6 * HOUR + i * MIN),
    })),
  );
  await settle(srv, metrics, [metric.id]);

  const sealed = rollupsOf(srv).sealed;
  const window = `start_at=${at(NOW - 6 * HOUR)}&end_at=${at(NOW)}&coverage_mode=observed&timezone=UTC`;
  const path = (interval: string, values: string) =>
    `${metrics}/${metric.id}/aggregation?${window}&interval=${interval}&values=${values}`;
  /** series label → bucket → [count, sum]; checked against the answer computed without the cache. */
  const answer = async (interval: string): Promise<{ cells: Map<string, Map<string, number[]>>; served: number }> => {
    const before = sealed.servedBuckets;
    const a = ok(await srv.get(path(interval, 'count,sum')));
    const served = sealed.servedBuckets - before;
    const b = ok(await srv.get(path(interval, 'count,sum,last')));
    const cells = (x: any) =>
      new Map<string, Map<string, number[]>>(
        x.series.map((s: any) => [
          s.details.label,
          new Map(Object.entries(s.records as Record<string, number[]>).map(([k, v]) => [k, v.slice(0, 2)])),
        ]),
      );
    assert.deepEqual(cells(a), cells(b), `${interval}: the cached answer equals the one computed from the stored rows`);
    return { cells: cells(a), served };
  };
  const total = (cells: Map<string, Map<string, number[]>>) =>
    [...cells.values()].flatMap((s) => [...s.values()]).reduce((n, v) => n + v[0]!, 0);

  // Asked twice: the second answer takes every sealed bucket from memory (sealed: up to 2 minutes
  // before the watermark, not a late window behind it).
  await answer('hour');
  await answer('minute');
  const hourly = await answer('hour');
  const minutely = await answer('minute');
  assert.ok(hourly.served >= 5, `hours served from memory: ${hourly.served}`);
  assert.ok(minutely.served >= 355, `minutes served from memory: ${minutely.served}`);
  assert.equal(total(hourly.cells), 361);

  // 1. A late record (inside the window: counted) into an hour and a minute already cached.
  const lateAt = Math.floor((NOW - 4 * HOUR - 30 * MIN) / MIN) * MIN;
  await send([{ g: 'a', n: 1000, timestamp: at(lateAt + 10_000) }]);
  await settle(srv, metrics, [metric.id]);
  const afterHourly = await answer('hour');
  const afterMinutely = await answer('minute');
  assert.equal(total(afterHourly.cells), 362, 'the late record shows in the next answer');
  const key = at(Math.floor(lateAt / HOUR) * HOUR);
  assert.deepEqual(
    afterHourly.cells.get('a')!.get(key),
    hourly.cells
      .get('a')!
      .get(key)!
      .map((x, i) => x + (i === 0 ? 1 : 1000)),
  );
  assert.deepEqual(afterMinutely.cells.get('a')!.get(at(lateAt)), [
    minutely.cells.get('a')!.get(at(lateAt))![0]! + 1,
    minutely.cells.get('a')!.get(at(lateAt))![1]! + 1000,
  ]);
  // Only the touched buckets were dropped: the ones before them still came from memory.
  assert.ok(afterHourly.served >= 1, `hours before the late one served: ${afterHourly.served}`);
  assert.ok(afterMinutely.served >= 85, `minutes before the late one served: ${afterMinutely.served}`);
  assert.ok((await answer('minute')).served >= 355, 'then every sealed minute again');

  // 2. A rebuilding update (a filter: a new revision): nothing of the old one is used.
  ok(await srv.post(`${metrics}/${metric.id}`, { filters: 'n >= 5' }));
  await settle(srv, metrics, [metric.id]);
  const filtered = await answer('hour');
  assert.equal(total(filtered.cells), 181, 'the rebuilt history under the filter');
  assert.ok((await answer('hour')).served >= 5);

  // 3. A delete lets go of everything cached for the metric; the restore rebuilds the same answer.
  const cachedBefore = sealed.size.entries;
  assert.ok(cachedBefore > 0);
  ok(await srv.delete(`${metrics}/${metric.id}`));
  assert.equal(sealed.size.entries, 0, 'the deleted metric keeps nothing cached');
  ok(await srv.post(`${metrics}/${metric.id}`, { deleted_at: null }));
  await settle(srv, metrics, [metric.id]);
  assert.deepEqual((await answer('hour')).cells, filtered.cells);
});
