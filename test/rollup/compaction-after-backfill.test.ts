import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { SCRIPT, viewSetup, writeViewFile, type FileRow } from '../transform/view-helpers.js';
import { TIERS, TOTAL_SERIES } from '../../src/rollup/rollup-types.js';
import { tierTable } from '../../src/rollup/rollup-store.js';
import { rollupsOf } from './rollup-helpers.js';

/**
 * Issue 12 (bench finding): after backfills over existing view files, compaction runs to the end by
 * itself — no restart, no test hook kicking it (only HTTP is polled here) — and `compact_percent`
 * of every metric reaches 100, with the partials folded into the tier rows. Two metrics backfilled
 * one after the other (as bench:query does), in passes smaller than the backlog.
 */

const OUT = [
  { name: 'host', type: 'string' as const },
  { name: 'region', type: 'string' as const },
  { name: 'ms', type: 'number' as const },
];
const T0 = Date.UTC(2026, 3, 1);

test('compaction after backfills reaches 100 % for every metric without a restart', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1', SLUICE_ROLLUP_COMPACT_ROWS: '300' } });
  t.after(() => srv.stop());
  const setup = await viewSetup(srv);
  const view = ok(
    await srv.post(setup.views, {
      name: 'Timings',
      collection_id: setup.collection.id,
      transform_script: SCRIPT,
      transform_mode: 'manual',
      output_schema: OUT,
    }),
    201,
  );
  let records = 0;
  for (let f = 0; f < 6; f++) {
    const rows: FileRow[] = Array.from({ length: 400 }, (_, i) => ({
      ts: T0 + f * 6 * 3_600_000 + i * 53_000,
      seq: 1000 + f * 1000 + i,
      values: { host: `h${i % 7}`, region: `r${i % 2}`, ms: i * 0.5 },
    }));
    await writeViewFile(srv, view, OUT, `f${f}.parquet`, rows);
    records += rows.length;
  }
  const metrics = `/v1/projects/${setup.project.id}/metrics`;
  const ids: string[] = [];
  for (const [name, group] of [
    ['By region', 'region'],
    ['By host', 'host'],
  ] as const) {
    const m = ok(await srv.post(metrics, { name, view_id: view.id, group_by: [group], value_field: 'ms' }), 201);
    ids.push(m.id);
    await until(async () => ok(await srv.get(`${metrics}/${m.id}`)).status === 'active', `${name} active`);
  }
  await until(async () => {
    const ms = await Promise.all(ids.map(async (id) => ok(await srv.get(`${metrics}/${id}`))));
    return ms.every((m) => m.compact_percent === 100);
  }, 'compact_percent 100 for both metrics');
  const db = rollupsOf(srv).db.reader;
  const count = async (sql: string, id: string) =>
    Number((await db.runAndReadAll(sql, sql.includes('$2') ? [id, TOTAL_SERIES] : [id])).getRows()[0]![0]);
  for (const id of ids) {
    const m = ok(await srv.get(`${metrics}/${id}`));
    assert.equal(m.compact_completed_count, m.compact_total_count, JSON.stringify(m));
    assert.ok(m.compact_total_count > 300, 'more partials than one pass folds');
    assert.equal(
      await count('SELECT count(*) FROM rollup_partials WHERE metric_id = $1', id),
      0,
      'every partial folded',
    );
    for (const tier of TIERS)
      assert.ok(
        (await count(`SELECT count(*) FROM ${tierTable(tier)} WHERE metric_id = $1`, id)) > 0,
        `${tier} rows of ${id}`,
      );
    // The total pseudo-series of the month tier holds every record once.
    assert.equal(
      await count(`SELECT sum(count) FROM ${tierTable('month')} WHERE metric_id = $1 AND series = $2`, id),
      records,
    );
  }
});

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
