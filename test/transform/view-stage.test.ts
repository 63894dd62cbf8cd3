import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transformViewsStage, type RunScript, type ViewInput, type ViewTask } from '../../src/transform/view-stage.js';
import { TransformSandbox } from '../../src/transform/sandbox.js';

/** A scratch directory and a sandbox, both gone after the test. */
function sandboxIn(t: TestContext): { root: string; sandbox: TransformSandbox } {
  const root = mkdtempSync(join(tmpdir(), 'sluice-view-stage-'));
  const sandbox = new TransformSandbox();
  t.after(() => {
    sandbox.dispose();
    rmSync(root, { recursive: true, force: true });
  });
  return { root, sandbox };
}

test('a sandbox that breaks its contract on a later view leaves no file of the earlier views', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'sluice-view-stage-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const base: ViewInput = {
    texts: ['{"id":1}', '{"id":2}'],
    ts: Float64Array.from([1, 2]),
    received: Float64Array.from([1, 2]),
    seq: Float64Array.from([7, 7]),
    versions: [null, null],
  };
  const task = (id: string): ViewTask => ({
    viewId: id,
    parentViewId: null,
    transformId: `t_${id}`,
    scriptHash: id,
    script: '',
    outputSchema: [{ name: 'id', type: 'number' }],
    dir: join(root, id),
  });
  await assert.rejects(
    transformViewsStage({
      base,
      views: [task('a'), task('b')],
      firstSeq: 7,
      run: (_batch, view) => {
        if (view.viewId === 'b') throw new Error('transform sandbox: broken answer');
        return { status: 'ok', outputs: [{ id: 1 }, { id: 2 }], sources: Uint32Array.from([0, 1]), rows: 2 };
      },
    }),
    /broken answer/,
  );
  assert.deepEqual(existsSync(join(root, 'a')) ? readdirSync(join(root, 'a')) : [], [], "view a's file is removed");
});

test("records of a routed schema version run their transform's script, the rest the view's; outputs keep record order; a failure names its transform and the batch's record", async (t) => {
  const { root, sandbox } = sandboxIn(t);
  const run: RunScript = (batch, view) => sandbox.run({ ...batch, ...view });
  const bodies = [Buffer.from('{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n{"n":5}')];
  const starts = [0, 8, 16, 24, 32];
  const base: ViewInput = {
    bytes: {
      bodies,
      entry: new Int32Array(5),
      start: Int32Array.from(starts),
      end: Int32Array.from(starts, (s) => s + 7),
    },
    ts: Float64Array.from([1, 2, 3, 4, 5]),
    received: Float64Array.from([1, 2, 3, 4, 5]),
    seq: Float64Array.from([9, 9, 9, 9, 9]),
    versions: ['sch_a', 'sch_b', 'sch_a', 'sch_b', 'sch_c'],
  };
  const view = (routeScript: string): ViewTask => ({
    viewId: 'v',
    parentViewId: null,
    transformId: 'vtr_default',
    scriptHash: 'h1',
    script: 'function transform(r) { return { n: r.n * 10 }; }',
    outputSchema: [{ name: 'n', type: 'number' }],
    dir: join(root, 'v'),
    routes: [
      { transformId: 'vtr_routed', scriptHash: `h-${routeScript.length}`, script: routeScript, versionIds: ['sch_b'] },
    ],
  });
  const seen: number[] = [];
  const [ok] = await transformViewsStage({
    base,
    views: [view('function transform(r) { return [{ n: -r.n }, { n: -r.n - 0.5 }]; }')],
    firstSeq: 9,
    run,
    onOutput: (_v, _ts, columns) => seen.push(...(columns[0]!.values as number[])),
  });
  assert.equal(ok!.status, 'ok');
  assert.deepEqual(
    seen,
    [10, -2, -2.5, 30, -4, -4.5, 50],
    "sch_b through the routed script (two outputs each), the rest through the view's, in record order",
  );

  const [failed] = await transformViewsStage({
    base,
    views: [view('function transform(r) { if (r.n === 4) throw new Error("no four"); return { n: r.n }; }')],
    firstSeq: 10,
    run,
  });
  assert.equal(failed!.status, 'failed');
  assert.equal(failed!.transformId, 'vtr_routed');
  assert.equal(
    failed!.status === 'failed' && failed!.recordIndex,
    3,
    "the batch's index of the record, not the route's",
  );
  assert.match(failed!.status === 'failed' ? failed!.message : '', /record 3\b.*no four/);
});

test('a date field holding ctx.timestamp or ctx.received_at stores the same times as their ISO strings would; other values are coerced as before', async (t) => {
  const { root, sandbox } = sandboxIn(t);
  const ts = [
    Date.UTC(2026, 0, 31, 12, 0, 0, 5),
    Date.UTC(2026, 0, 31, 23, 59, 59, 999),
    1.5,
    -62198755200000 /* year -0001 */,
  ];
  const base: ViewInput = {
    texts: ts.map((_, i) => JSON.stringify({ i })),
    ts: Float64Array.from(ts),
    received: Float64Array.from(ts, (x) => x + 1000),
    seq: Float64Array.from(ts, () => 3),
    versions: ts.map(() => null),
  };
  const script = `function transform(r, ctx) {
    return { at: ctx.timestamp, got: ctx.received_at, copy: ctx.timestamp + '', text: ctx.timestamp, other: r.i === 0 ? '2020-01-01T00:00:00.000Z' : null };
  }`;
  const outputSchema = [
    { name: 'at', type: 'date' as const },
    { name: 'got', type: 'date' as const },
    { name: 'copy', type: 'date' as const },
    { name: 'text', type: 'string' as const },
    { name: 'other', type: 'date' as const },
  ];
  const cols: Record<string, unknown[]> = {};
  const [o] = await transformViewsStage({
    base,
    views: [
      {
        viewId: 'v',
        parentViewId: null,
        transformId: 'vtr_v',
        scriptHash: 'hd',
        script,
        outputSchema,
        dir: join(root, 'v'),
      },
    ],
    firstSeq: 3,
    run: (batch, view) => sandbox.run({ ...batch, ...view }),
    onOutput: (_v, _ts, columns) => columns.forEach((c) => (cols[c.name] = c.values)),
  });
  assert.equal(o!.status, 'ok');
  const iso = (ms: number) => new Date(ms).toISOString();
  // 1.5 ms shows as …001Z and reads back as 1; year -0001 has no 24-character form and does not coerce.
  assert.deepEqual(cols.at, [ts[0], ts[1], 1, null]);
  assert.deepEqual(cols.got, [ts[0]! + 1000, ts[1]! + 1000, 1001, null]);
  assert.deepEqual(cols.copy, cols.at, 'an equal string made by the script: the same times');
  assert.deepEqual(cols.text, [iso(ts[0]!), iso(ts[1]!), iso(1.5), iso(ts[3]!)], 'a string field keeps the ISO text');
  assert.deepEqual(cols.other, [Date.UTC(2020, 0, 1), null, null, null]);
  assert.equal(o!.status === 'ok' && o!.counts.failed.at, 1);
});
