import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transformViewsStage, type RunScript, type ViewInput, type ViewTask } from '../../src/transform/view-stage.js';
import { TransformSandbox } from '../../src/transform/sandbox.js';

test('a sandbox that breaks its contract on a later view leaves no file of the earlier views', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'sluice-view-stage-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const base: ViewInput = { texts: ['{"id":1}', '{"id":2}'], ts: Float64Array.from([1, 2]), received: Float64Array.from([1, 2]), seq: Float64Array.from([7, 7]), versions: [null, null] };
  const task = (id: string): ViewTask => ({ viewId: id, parentViewId: null, transformId: `t_${id}`, scriptHash: id, script: '', outputSchema: [{ name: 'id', type: 'number' }], dir: join(root, id) });
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
  assert.deepEqual(existsSync(join(root, 'a')) ? readdirSync(join(root, 'a')) : [], [], 'view a\'s file is removed');
});

test('records of a routed schema version run their transform\'s script, the rest the view\'s; outputs keep record order; a failure names its transform and the batch\'s record', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'sluice-view-stage-'));
  const sandbox = new TransformSandbox();
  t.after(() => {
    sandbox.dispose();
    rmSync(root, { recursive: true, force: true });
  });
  const run: RunScript = (batch, view) => sandbox.run({ ...batch, ...view });
  const bodies = [Buffer.from('{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n{"n":5}')];
  const starts = [0, 8, 16, 24, 32];
  const base: ViewInput = {
    bytes: { bodies, entry: new Int32Array(5), start: Int32Array.from(starts), end: Int32Array.from(starts, (s) => s + 7) },
    ts: Float64Array.from([1, 2, 3, 4, 5]),
    received: Float64Array.from([1, 2, 3, 4, 5]),
    seq: Float64Array.from([9, 9, 9, 9, 9]),
    versions: ['sch_a', 'sch_b', 'sch_a', 'sch_b', 'sch_c'],
  };
  const view = (routeScript: string): ViewTask => ({
    viewId: 'v', parentViewId: null, transformId: 'vtr_default', scriptHash: 'h1', script: 'function transform(r) { return { n: r.n * 10 }; }',
    outputSchema: [{ name: 'n', type: 'number' }], dir: join(root, 'v'),
    routes: [{ transformId: 'vtr_routed', scriptHash: `h-${routeScript.length}`, script: routeScript, versionIds: ['sch_b'] }],
  });
  const seen: number[] = [];
  const [ok] = await transformViewsStage({ base, views: [view('function transform(r) { return [{ n: -r.n }, { n: -r.n - 0.5 }]; }')], firstSeq: 9, run, onOutput: (_v, _ts, columns) => seen.push(...(columns[0]!.values as number[])) });
  assert.equal(ok!.status, 'ok');
  assert.deepEqual(seen, [10, -2, -2.5, 30, -4, -4.5, 50], 'sch_b through the routed script (two outputs each), the rest through the view\'s, in record order');

  const [failed] = await transformViewsStage({ base, views: [view('function transform(r) { if (r.n === 4) throw new Error("no four"); return { n: r.n }; }')], firstSeq: 10, run });
  assert.equal(failed!.status, 'failed');
  assert.equal(failed!.transformId, 'vtr_routed');
  assert.equal(failed!.status === 'failed' && failed!.recordIndex, 3, 'the batch\'s index of the record, not the route\'s');
  assert.match(failed!.status === 'failed' ? failed!.message : '', /record 3\b.*no four/);
});
