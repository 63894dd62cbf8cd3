import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeState, emptyState } from '../../src/rollup/bucket-state.js';
import { compactPartials } from '../../src/rollup/compactor.js';
import { RollupStore } from '../../src/rollup/rollup-store.js';
import type { MetricPartials } from '../../src/rollup/rollup-types.js';

/**
 * Compaction passes while backfilled files keep merging on the appending connection (the bench's
 * backfill of large files): no pass fails on the concurrent appends, and every record is in the
 * tiers exactly once at the end.
 */

const T0 = Date.UTC(2026, 3, 1);

function filePartials(file: number, minutes: number, series: number): MetricPartials {
  const state = emptyState({ values: true, distinct: false });
  state.count = 1;
  state.values!.add(file + 1);
  const bytes = encodeState(state);
  const partials = [];
  for (let m = 0; m < minutes; m++)
    for (let s = 0; s < series; s++)
      partials.push({ series: s, minute: T0 + (file * minutes + m) * 60_000, state: bytes });
  return {
    metricId: 'm1',
    revision: 1,
    series: Array.from({ length: series }, (_, s) => ({ hash: `s${s}`, dimensions: {}, display: null })) as never,
    partials,
    kept: minutes * series,
  };
}

test('compaction passes alongside large backfill merges neither fail nor lose rows', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compact-concurrent-'));
  const store = await RollupStore.open(dir);
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const files = 12;
  const [minutes, series] = [600, 20];
  let appending = true;
  const merges = (async () => {
    for (let f = 0; f < files; f++)
      assert.equal(await store.mergeBackfillFile('m1', 1, `f${f}`, filePartials(f, minutes, series)), true);
    appending = false;
  })();
  let passes = 0;
  const failures: unknown[] = [];
  for (let more = true; more || appending; ) {
    try {
      more = (await compactPartials(store, () => 1, 3_000)).more;
      passes++;
    } catch (err) {
      failures.push(err);
      more = true;
    }
    if (!more) await new Promise((r) => setTimeout(r, 5));
  }
  await merges;
  while ((await compactPartials(store, () => 1, 3_000)).more);
  assert.deepEqual(
    failures.map((e) => String((e as Error).message)),
    [],
    `${failures.length} of ${passes + failures.length} passes failed`,
  );
  const rows = (
    await store.reader.runAndReadAll(
      `SELECT (SELECT count(*) FROM rollup_partials)::DOUBLE, (SELECT sum(count) FROM rollup_month)::DOUBLE, (SELECT count(*) FROM rollup_minute)::DOUBLE`,
    )
  ).getRows()[0]!;
  assert.deepEqual(rows.map(Number), [0, files * minutes * series, files * minutes * series]);
});
