import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transformViewsStage, type ViewInput, type ViewTask } from '../../src/transform/view-stage.js';

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
