import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { ViewRecord, ViewTransformRecord } from '../../src/transform/view-records.js';
import {
  dependantsOf,
  derivedStatus,
  newTransform,
  scriptHash,
  topologicalOrder,
  withDependants,
} from '../../src/transform/view-rules.js';

/** A view record with only what the graph rules read. */
function view(id: string, created: number, over: Partial<ViewRecord> = {}): ViewRecord {
  return {
    id,
    created_at: new Date(created).toISOString(),
    parent_view_id: null,
    join_base_view_id: null,
    joins: [],
    ...over,
  } as ViewRecord;
}

const lookup = (id: string) => ({
  alias: id,
  lookup_view_id: id,
  join_type: 'left' as const,
  base_field: 'k',
  lookup_field: 'k',
  match_strategy: 'latest' as const,
  priority: 0,
});

test('scriptHash: the first 16 hex characters of the SHA-256, null without a script', () => {
  assert.equal(scriptHash('x'), createHash('sha256').update('x').digest('hex').slice(0, 16));
  assert.equal(scriptHash(null), null);
});

test('newTransform: a script serves at once with a pending backfill; none queues generation', () => {
  const t = newTransform('viw_1', 'return 1', '2026-01-01T00:00:00.000Z');
  assert.match(t.id, /^vtr_/);
  assert.deepEqual([t.status, t.backfill_status, t.script_hash], ['active', 'pending', scriptHash('return 1')]);
  const q = newTransform('viw_1', null, '2026-01-01T00:00:00.000Z');
  assert.deepEqual([q.status, q.backfill_status, q.script_hash], ['queued', 'none', null]);
});

test('derivedStatus: active while a transform runs a script; an error stays until one does', () => {
  const t = (status: ViewTransformRecord['status'], script: string | null) =>
    ({ status, transform_script: script }) as ViewTransformRecord;
  assert.equal(derivedStatus('initializing', [t('queued', null)]), 'initializing');
  assert.equal(
    derivedStatus('initializing', [t('queued', 'x')]),
    'active',
    'a queued transform keeps serving its script',
  );
  assert.equal(derivedStatus('active', [t('disabled', 'x')]), 'initializing');
  assert.equal(derivedStatus('error', [t('error', 'x')]), 'error');
  assert.equal(derivedStatus('error', [t('error', 'x'), t('active', 'y')]), 'active');
});

test('topologicalOrder: inputs first whatever the creation order; ties by creation time', () => {
  // Created out of dependency order (records written by hand or restored from a backup).
  const join = view('j', 1, { join_base_view_id: 'b', joins: [lookup('c')] });
  const child = view('c', 2, { parent_view_id: 'a' });
  const a = view('a', 3);
  const b = view('b', 4);
  const lone = view('z', 0);
  const order = topologicalOrder([join, child, a, b, lone]).map((v) => v.id);
  assert.deepEqual(order, ['z', 'b', 'a', 'c', 'j']);
  for (const [before, after] of [
    ['a', 'c'],
    ['c', 'j'],
    ['b', 'j'],
  ] as const)
    assert.ok(order.indexOf(before) < order.indexOf(after), `${before} before ${after}`);
  // Inputs outside the set are ignored.
  assert.deepEqual(
    topologicalOrder([child]).map((v) => v.id),
    ['c'],
  );
});

test('dependantsOf / withDependants: derived and join views, transitively', () => {
  const a = view('a', 1);
  const b = view('b', 2, { parent_view_id: 'a' });
  const c = view('c', 3);
  const j = view('j', 4, { join_base_view_id: 'c', joins: [lookup('b')] });
  const k = view('k', 5, { parent_view_id: 'j' });
  const all = [a, b, c, j, k];
  assert.deepEqual(
    dependantsOf('a', all).map((v) => v.id),
    ['b'],
  );
  assert.deepEqual(
    dependantsOf('b', all).map((v) => v.id),
    ['j'],
  );
  assert.deepEqual(
    withDependants([a], all)
      .map((v) => v.id)
      .sort(),
    ['a', 'b', 'j', 'k'],
  );
  assert.deepEqual(
    withDependants([c], all)
      .map((v) => v.id)
      .sort(),
    ['c', 'j', 'k'],
  );
});
