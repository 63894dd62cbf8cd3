import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  decodeState,
  emptyState,
  encodeState,
  figuresOf,
  mergeState,
  type BucketState,
} from '../../src/rollup/bucket-state.js';
import { CompactThread, CompactThreads, mergeHere } from '../../src/rollup/compact-thread.js';
import { compactPartials } from '../../src/rollup/compactor.js';
import { loadHasher } from '../../src/rollup/hll.js';
import { RollupStore, tierTable } from '../../src/rollup/rollup-store.js';
import { bucketStart, TIERS, type MetricPartials } from '../../src/rollup/rollup-types.js';
import { mulberry32 } from '../helpers/seeded-random.js';

/**
 * docs/metrics.md, "Rollups": a compaction pass folds the oldest partial rows of every metric in
 * it — several metric revisions, stale ones only deleted — into the minute, hour, day and month
 * rows, in passes of a bounded size. Whatever the pass size, each tier row is the merge of its
 * partials in commit order, with figures from its state, and no partial is left.
 */

const MIN = 60_000;
/** Around midnight of 1970-01-01 (times before it: floor division) and across a month's end. */
const STARTS = [-90 * MIN, Date.UTC(2026, 0, 31, 23, 0)];

function partials(rnd: () => number, metricId: string, revision: number, rows: number): MetricPartials {
  const out = [];
  for (let k = 0; k < rows; k++) {
    const state = emptyState({ values: true, distinct: true });
    state.count = 1 + Math.floor(rnd() * 3);
    for (let i = 0; i < state.count; i++) {
      if (rnd() < 0.2) continue;
      state.values!.add(Math.round((rnd() - 0.3) * 1e4) / 10);
      state.distinct!.add(`u${Math.floor(rnd() * 40)}`);
    }
    const from = STARTS[Math.floor(rnd() * STARTS.length)]!;
    const minute = from + Math.floor(rnd() * 180) * MIN;
    if (rnd() < 0.7) {
      state.last = Math.round(rnd() * 100);
      // A record's time lies in its minute; ties of `last` times within a minute: the one merged last wins.
      state.lastAt = minute + Math.floor(rnd() * 2) * 1000;
    }
    out.push({
      series: Math.floor(rnd() * 4),
      minute,
      state: encodeState(state),
    });
  }
  return {
    metricId,
    revision,
    series: [0, 1, 2, 3].map((s) => ({ hash: `${metricId}-s${s}`, dimensions: {}, display: null })) as never,
    partials: out,
    kept: rows,
  };
}

for (const [limit, where] of [
  [37, 'the compaction thread'],
  [41, 'three compaction threads (rows split by series)'],
  [50_000, 'this thread'],
] as const) {
  test(`compaction in passes of ${limit} rows, states merged on ${where}: every tier row is the merge of its partials, stale revisions dropped`, async (t) => {
    await loadHasher();
    const dir = mkdtempSync(join(tmpdir(), 'compactor-'));
    const store = await RollupStore.open(dir);
    t.after(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const rnd = mulberry32(limit);
    const current: Record<string, number> = { m1: 1, m2: 3, m3: 2 };
    // Files of three metrics interleaved; m3's are of revision 1, which is no longer current.
    const files: MetricPartials[] = [];
    for (let i = 0; i < 6; i++)
      for (const [id, rev] of [
        ['m1', 1],
        ['m2', 3],
        ['m3', 1],
      ] as const)
        files.push(partials(rnd, id, rev, 20 + Math.floor(rnd() * 60)));
    for (const [i, f] of files.entries())
      assert.equal(await store.mergeBackfillFile(f.metricId, f.revision, `f${i}`, f), true);

    const thread = where === 'the compaction thread' ? new CompactThread() : new CompactThreads(3);
    t.after(() => thread.stop());
    const merge = where === 'this thread' ? mergeHere : thread.merge;
    let passes = 0;
    for (let more = true; more; passes++)
      more = (await compactPartials(store, (id) => current[id] ?? null, limit, merge)).more;
    const total = files.reduce((n, f) => n + f.partials.length, 0);
    assert.ok(passes >= Math.ceil(total / limit), `${passes} passes`);

    // The expected rows: each current file's partials merged in commit order, per tier bucket.
    for (const tier of TIERS) {
      const want = new Map<string, BucketState>();
      for (const f of files) {
        if (current[f.metricId] !== f.revision) continue;
        for (const p of f.partials) {
          const key = `${f.metricId}|${f.series[p.series]!.hash}|${bucketStart(tier, p.minute)}`;
          const s = want.get(key) ?? emptyState({ values: true, distinct: true });
          mergeState(s, decodeState(p.state));
          want.set(key, s);
        }
      }
      const rows = await store.transaction('read', async (conn) =>
        (
          await conn.runAndReadAll(
            `SELECT metric_id, revision, series, start::DOUBLE, count::DOUBLE, sum, min, max, last, last_at::DOUBLE, p50, p95, p99, distinct_count, state FROM ${tierTable(tier)}`,
          )
        ).getRows(),
      );
      assert.equal(rows.length, want.size, `${tier}: rows`);
      for (const [
        metricId,
        revision,
        series,
        start,
        count,
        sum,
        min,
        max,
        last,
        lastAt,
        p50,
        p95,
        p99,
        distinct,
        blob,
      ] of rows) {
        const key = `${String(metricId)}|${String(series)}|${Number(start)}`;
        const s = want.get(key);
        assert.ok(s, `${tier}: unexpected row ${key}`);
        assert.equal(Number(revision), current[String(metricId)]);
        const f = figuresOf(s);
        const stored = figuresOf(decodeState((blob as { bytes: Uint8Array }).bytes));
        // A coarser row is merged from its finer rows' merges: sums may differ in the last bits.
        assert.ok(Math.abs((stored.sum ?? 0) - (f.sum ?? 0)) <= 1e-9 * Math.abs(f.sum ?? 1), `${tier} ${key}: sum`);
        assert.ok(
          Math.abs(Number(sum ?? 0) - (f.sum ?? 0)) <= 1e-9 * Math.abs(f.sum ?? 1),
          `${tier} ${key}: sum column`,
        );
        assert.deepEqual({ ...stored, sum: null }, { ...f, sum: null }, `${tier} ${key}: state`);
        assert.deepEqual(
          [Number(count), min, max, last, lastAt === null ? null : Number(lastAt), p50, p95, p99, distinct],
          [f.count, f.min, f.max, f.last, f.last_at, f.p50, f.p95, f.p99, f.distinct],
          `${tier} ${key}: figures`,
        );
      }
    }
    const left = await store.partialsByMetric();
    assert.equal(left.size, 0, 'no partial left');
  });
}

test('a compaction thread that dies fails its pass, which rolls back whole; the next pass starts a new thread and folds everything', async (t) => {
  await loadHasher();
  const dir = mkdtempSync(join(tmpdir(), 'compactor-dies-'));
  const store = await RollupStore.open(dir);
  const thread = new CompactThread();
  t.after(async () => {
    await thread.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const f = partials(mulberry32(5), 'm1', 1, 200);
  assert.equal(await store.mergeBackfillFile('m1', 1, 'f0', f), true);
  // The thread ends while the pass is merging (as a crash of it would).
  const dying: typeof thread.merge = (input) => {
    const merging = thread.merge(input);
    void thread.stop();
    return merging;
  };
  await assert.rejects(
    compactPartials(store, () => 1, 50_000, dying),
    /compaction thread/,
  );
  const rows = async (table: string) =>
    Number(
      (
        await store.transaction('count', async (conn) =>
          (await conn.runAndReadAll(`SELECT count(*)::DOUBLE FROM ${table}`)).getRows(),
        )
      )[0]![0],
    );
  assert.equal(await rows('rollup_partials'), 200, 'the failed pass deleted no partial');
  assert.equal(await rows(tierTable('minute')), 0, 'and wrote no tier row');
  for (let more = true; more; ) more = (await compactPartials(store, () => 1, 50_000, thread.merge)).more;
  assert.equal(await rows('rollup_partials'), 0);
  const count = await store.transaction('sum', async (conn) =>
    (await conn.runAndReadAll(`SELECT sum(count)::DOUBLE FROM ${tierTable('month')}`)).getRows(),
  );
  assert.equal(
    Number(count[0]![0]),
    f.partials.reduce((n, p) => n + decodeState(p.state).count, 0),
  );
});
