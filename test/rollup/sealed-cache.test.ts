import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { ingestProject, rollupsOf, settle } from './rollup-helpers.js';

/**
 * docs/metrics.md, "Sealed buckets": answers take sealed buckets from memory, and every event that
 * changes them — a late-data re-backfill, a backfill (rebuild), a metric update that rebuilds, a change
 * of view, a delete and restore — is seen in the next answer; a restart starts empty. Each step
 * first has the window's sealed buckets cached (the cache served them), then makes the event put
 * records into those buckets, then checks the answer against one computed without the cache.
 */

const MIN = 60_000;
const HOUR = 60 * MIN;

/** A test server (stopped when `t` ends) with one project whose late-data window is `lateMinutes`. */
async function projectWithLateWindow(t: TestContext, name: string, lateMinutes: number) {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const { project, send } = await ingestProject(srv, name, 'events');
  ok(await srv.post(project, { late_data_window_minutes: lateMinutes }));
  return { srv, project, send, metrics: `${project}/metrics` };
}

test('sealed buckets: cached between answers, and never stale after a re-backfill, a backfill, a rebuilding update, a view change, a delete and restore, or a restart', async (t) => {
  const { srv, project, send, metrics } = await projectWithLateWindow(t, 'sealed', 60);
  const now = Date.now();
  const at = (ms: number) => new Date(ms).toISOString();

  await send([{ g: 'a', n: 1 }]);
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  const [collection] = ok(await srv.get(`${project}/collections`));
  const viewBody = (name: string, factor: number) => ({
    name,
    collection_id: collection.id,
    transform_mode: 'manual',
    transform_script: `function transform(r) { return { g: r.g, n: r.n * ${factor} }; }`,
    output_schema: [
      { name: 'g', type: 'string' },
      { name: 'n', type: 'number' },
    ],
  });
  const view = ok(await srv.post(`${project}/views`, viewBody('Events', 1)), 201);
  for (let i = 0; i < 200 && ok(await srv.get(`${project}/views/${view.id}/records`)).length === 0; i++)
    await new Promise((r) => setTimeout(r, 50));
  const metric = ok(
    await srv.post(metrics, { name: 'Events', view_id: view.id, group_by: ['g'], value_field: 'n' }),
    201,
  );
  await settle(srv, metrics, [metric.id]);
  // Live records now: the view's watermark is now, so records more than an hour back are late.
  await send([
    { g: 'a', n: 1 },
    { g: 'b', n: 2 },
  ]);
  await settle(srv, metrics, [metric.id]);

  const sealed = rollupsOf(srv).sealed;
  // A fixed window of five hours by minute: everything older than ~an hour is sealed.
  const window = `start_at=${at(now - 5 * HOUR)}&end_at=${at(now)}&interval=minute&coverage_mode=observed&timezone=UTC`;
  const cached = `${metrics}/${metric.id}/aggregation?${window}&values=count,sum`;
  // `last` carries forward across buckets: such answers are never taken from sealed buckets.
  const uncached = `${metrics}/${metric.id}/aggregation?${window}&values=count,sum,last`;
  // The same with one series kept and the other folded into `__other__` (by subtraction; with
  // `last`, uncached, by merging the tail).
  const folded = `${cached}&max_series=1`;
  const foldedUncached = `${uncached}&max_series=1`;
  let foldServed = 0;
  /** series label → bucket → [count, sum], from the cached answer, checked against the uncached one. */
  const answer = async (): Promise<Map<string, Map<string, number[]>>> => {
    const a = ok(await srv.get(cached));
    const b = ok(await srv.get(uncached));
    const cells = (x: any) =>
      new Map<string, Map<string, number[]>>(
        x.series.map((s: any) => [
          s.details.label,
          new Map(Object.entries(s.records as Record<string, number[]>).map(([k, v]) => [k, v.slice(0, 2)])),
        ]),
      );
    assert.deepEqual(cells(a), cells(b), 'the cached answer equals the one computed from the stored rows');
    const served = sealed.servedBuckets;
    const f = ok(await srv.get(folded));
    foldServed = sealed.servedBuckets - served;
    const fu = ok(await srv.get(foldedUncached));
    assert.deepEqual(cells(f), cells(fu), 'the cached folded answer equals the one computed from the stored rows');
    // The series with data in sealed buckets are kept too (the scan deciding what folds).
    assert.equal(f.series_total, fu.series_total);
    assert.equal(f.series_total, a.series.length, 'series_total counts every series with data');
    // Folding keeps every record: per bucket, the folded answer's series add up to the unfolded ones.
    const perBucket = (x: Map<string, Map<string, number[]>>) => {
      const out = new Map<string, number[]>();
      for (const s of x.values())
        for (const [k, v] of s)
          out.set(
            k,
            (out.get(k) ?? [0, 0]).map((n, i) => n + v[i]!),
          );
      return out;
    };
    assert.deepEqual(perBucket(cells(f)), perBucket(cells(a)), 'kept + __other__ = every series');
    return cells(a);
  };
  /** Records counted in buckets older than two hours (sealed), all series. */
  const sealedCount = (cells: Map<string, Map<string, number[]>>) => {
    let n = 0;
    for (const s of cells.values()) for (const [k, v] of s) if (Date.parse(k) < now - 2 * HOUR) n += v[0]!;
    return n;
  };
  /** Ask twice: the second answer takes the sealed buckets from memory. */
  const cachedAnswer = async () => {
    await answer();
    const served = sealed.servedBuckets;
    const cells = await answer();
    assert.ok(
      sealed.servedBuckets - served >= 3 * 60,
      `the sealed buckets were served from memory (${sealed.servedBuckets - served})`,
    );
    assert.ok(foldServed >= 3 * 60, `the folded answer's sealed buckets were served from memory (${foldServed})`);
    return cells;
  };

  assert.equal(sealedCount(await cachedAnswer()), 0);

  // 1. Late data, then its re-backfill: 7 records three hours back join sealed buckets, one of them
  // of a new series (which the folded answer must then count and fold).
  await send(
    Array.from({ length: 7 }, (_, i) => ({ g: i === 6 ? 'c' : 'a', n: 100, timestamp: at(now - 3 * HOUR - i * MIN) })),
  );
  await settle(srv, metrics, [metric.id]);
  assert.equal(sealedCount(await cachedAnswer()), 0, 'late events are kept out');
  const [file] = ok(await srv.get(`${project}/late_data?refolded=false`));
  ok(await srv.post(`${project}/late_data/${file.id}/re_backfill`, {}));
  await srv.sluice.services.lateRefold!.idle();
  await rollupsOf(srv).idle();
  assert.equal(sealedCount(await cachedAnswer()), 7, 're_backfill: the folded events show');

  // 2. A backfill (POST …/backfill rebuilds from the view's files, late events included).
  await send(Array.from({ length: 5 }, (_, i) => ({ g: 'b', n: 2, timestamp: at(now - 4 * HOUR - i * MIN) })));
  await settle(srv, metrics, [metric.id]);
  assert.equal(sealedCount(await cachedAnswer()), 7, 'the new late events are kept out');
  ok(await srv.post(`${metrics}/${metric.id}/backfill`, {}));
  await settle(srv, metrics, [metric.id]);
  assert.equal(sealedCount(await cachedAnswer()), 12, 'backfill: every event of the files');

  // 3. An update that rebuilds (a filter).
  ok(await srv.post(`${metrics}/${metric.id}`, { filters: 'n > 50' }));
  await settle(srv, metrics, [metric.id]);
  assert.equal(sealedCount(await cachedAnswer()), 7, 'the rebuilt history under the filter');

  // 4. A change of view: the same collection through a transform that multiplies by 10.
  const view10 = ok(await srv.post(`${project}/views`, viewBody('Events x10', 10)), 201);
  for (let i = 0; i < 400 && ok(await srv.get(`${project}/views/${view10.id}/records?limit=100`)).length < 15; i++)
    await new Promise((r) => setTimeout(r, 50));
  ok(await srv.post(`${metrics}/${metric.id}`, { view_id: view10.id, filters: '' }));
  await settle(srv, metrics, [metric.id]);
  const tenfold = await cachedAnswer();
  assert.equal(sealedCount(tenfold), 12, 'every sealed event through the new view');
  const sumOf = (cells: Map<string, Map<string, number[]>>) =>
    [...cells.values()]
      .flatMap((s) => [...s.entries()].filter(([k]) => Date.parse(k) < now - 2 * HOUR).map(([, v]) => v[1]!))
      .reduce((a, b) => a + b, 0);
  assert.equal(sumOf(tenfold), 7 * 1000 + 5 * 20, 'the sums of the new view');

  // 5. Delete and restore: events sent meanwhile (late for live counting) are in the view's files,
  // and the restore rebuilds from them.
  ok(await srv.delete(`${metrics}/${metric.id}`));
  assert.equal(sealed.size.entries, 0, 'the deleted metric keeps nothing cached');
  await send(Array.from({ length: 3 }, (_, i) => ({ g: 'a', n: 1, timestamp: at(now - 3.5 * HOUR - i * MIN) })));
  assert.ok(await srv.sluice.services.pipeline!.idle(30_000));
  for (let i = 0; i < 400 && ok(await srv.get(`${project}/views/${view10.id}/records?limit=100`)).length < 18; i++)
    await new Promise((r) => setTimeout(r, 50));
  ok(await srv.post(`${metrics}/${metric.id}`, { deleted_at: null }));
  await settle(srv, metrics, [metric.id]);
  const restored = await cachedAnswer();
  assert.equal(sealedCount(restored), 15, 'restore: rebuilt from the files');

  // 6. A restart starts with nothing cached and answers the same.
  await srv.restart();
  await settle(srv, metrics, [metric.id]);
  assert.equal(rollupsOf(srv).sealed.size.entries, 0);
  assert.deepEqual(await answer(), restored);
});

test('sealed buckets: concurrent answers of many shapes (values, intervals, zones, handling) equal the ones computed without the cache', async (t) => {
  // Accept three hours of history while sending it, then seal everything older than a few minutes.
  const { srv, project, send, metrics } = await projectWithLateWindow(t, 'sealed shapes', 600);
  await send([{ g: 'a', n: 1, u: 'x' }]);
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
  const metric = ok(
    await srv.post(metrics, { name: 'Events', view_id: view.id, group_by: ['g'], value_field: 'n', unique_field: 'u' }),
    201,
  );
  await settle(srv, metrics, [metric.id]);
  const now = Date.now();
  const recs = Array.from({ length: 3000 }, (_, i) => ({
    g: ['a', 'b', 'c'][i % 3],
    n: i % 7 === 0 ? null : (i * 37) % 101,
    u: `u${i % 113}`,
    timestamp: new Date(now - 3 * HOUR + (i / 3000) * 3 * HOUR).toISOString(),
  }));
  for (let i = 0; i < recs.length; i += 500) await send(recs.slice(i, i + 500));
  await settle(srv, metrics, [metric.id]);
  ok(await srv.post(project, { late_data_window_minutes: 0 }));

  const window = `start_at=${new Date(now - 4 * HOUR).toISOString()}&end_at=${new Date(now).toISOString()}&coverage_mode=observed`;
  const shapes = [
    'interval=minute&values=count,sum',
    'interval=minute&values=average,min,max&empty_bucket_handling=gaps',
    'interval=minute&values=p50,p95,p99&null_handling=count_as_zero',
    'interval=minute&values=count_unique,count&normalize=false',
    'interval=hour&values=count,sum,p95',
    'interval=hour&values=count,average&timezone=Asia/Kolkata',
    'interval=minute&values=count&coverage_mode=strict',
    'interval=hour&values=count_unique&regression=linear',
    // Folded: two series kept, the third in `__other__` (subtracted; count_unique merged).
    'interval=minute&values=count,sum&max_series=2',
    'interval=minute&values=count_unique,count&max_series=2',
    'interval=hour&values=p95,count&max_series=1&empty_bucket_handling=gaps',
    'interval=minute&values=count,sum&max_series=1&normalize=false',
  ];
  const path = (shape: string, extra = '') =>
    `${metrics}/${metric.id}/aggregation?${window}&${shape.replace('values=', `values=${extra}`)}`.replace(
      /coverage_mode=observed(.*)coverage_mode=strict/,
      'coverage_mode=strict$1',
    );
  const columns = (a: any, drop: number) =>
    a.series.map((s: any) => [
      s.details.hash,
      Object.entries(s.records).map(([k, v]) => [k, (v as unknown[]).slice(drop)]),
    ]);
  /** Two rounds of every shape at once (reads in flight together share no prepared statement), cached and not: the buckets the second served from memory. */
  const rounds = async (
    list: readonly string[],
    seriesCount: (shape: string) => number,
    extra = '',
  ): Promise<number> => {
    let served = 0;
    for (let round = 0; round < 2; round++) {
      const before = rollupsOf(srv).sealed.servedBuckets;
      const answers = await Promise.all(
        list.flatMap((s) => [srv.get(path(s) + extra), srv.get(path(s, 'last,') + extra)]),
      );
      served = rollupsOf(srv).sealed.servedBuckets - before;
      list.forEach((s, i) => {
        const cached = ok(answers[2 * i]!);
        const uncached = ok(answers[2 * i + 1]!);
        assert.equal(cached.series.length, seriesCount(s), s);
        assert.deepEqual(columns(cached, 0), columns(uncached, 1), `${s}${extra}: cached = computed`);
        assert.equal(cached.series_total, uncached.series_total);
        // Fits read the tables' numbers, cached rows included.
        if (s.includes('regression'))
          assert.ok(
            cached.series.every((x: any) => x.regression !== null),
            s,
          );
      });
    }
    return served;
  };
  assert.ok(
    (await rounds(shapes, (s) => (s.includes('max_series=1') ? 2 : 3))) > 1000,
    'the second round was served from memory',
  );

  // A pin changes which series are kept as themselves, so what `__other__` folds: the folded shapes
  // are answered anew (other kept series, another key), then from memory again.
  const folds = shapes.filter((s) => s.includes('max_series'));
  const list = ok(await srv.get(`${metrics}/${metric.id}/series`));
  const c = list.find((x: any) => x.dimensions.g === 'c');
  ok(await srv.post(`${metrics}/${metric.id}/series/${c.id}`, { pinned: true }));
  assert.ok((await rounds(folds, () => 2)) > 300, 'pinned: the second round was served from memory');
  const pinned = ok(await srv.get(path(folds[0]!)));
  assert.deepEqual(
    pinned.series.map((x: any) => x.details.label),
    ['c', 'Other'],
  );
  // A `series` filter: exactly those series, no fold.
  assert.ok((await rounds(folds.slice(0, 2), () => 1, `&series=${c.hash}`)) > 100);
});
