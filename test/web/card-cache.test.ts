import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CardCache, cardKey } from '../../src/web/card-cache.js';

test('card cache: least recently used goes first; a key changes with everything an answer depends on', () => {
  const c = new CardCache<number>(2);
  c.set('a', 1);
  c.set('b', 2);
  assert.equal(c.get('a'), 1);
  c.set('c', 3);
  assert.equal(c.get('b'), undefined, 'b was used least recently');
  assert.equal(c.get('a'), 1);
  c.delete('a');
  assert.equal(c.size, 1);

  const base = {
    metricId: 'met_x',
    revision: 1,
    updatedAt: '2026-01-01T00:00:00.000Z',
    completeThrough: 1000,
    now: 120_000,
    query: { time_range: 'last_hour' },
    customRange: undefined,
  };
  const k = cardKey(base);
  assert.equal(cardKey({ ...base, now: 179_999 }), k, 'the same minute');
  for (const change of [
    { now: 180_000 },
    { completeThrough: 2000 },
    { revision: 2 },
    { updatedAt: '2026-01-02T00:00:00.000Z' },
    { query: { time_range: 'last_6_hours' } },
    { customRange: { start_at: 'a', end_at: 'b' } },
    { metricId: 'met_y' },
  ]) {
    assert.notEqual(cardKey({ ...base, ...change }), k, JSON.stringify(change));
  }
});
