import { test } from 'node:test';
import assert from 'node:assert/strict';
import { alertWindow, overlaps } from '../../src/api/alerts/routes.js';
import { ApiError } from '../../src/errors.js';

const NOW = Date.parse('2026-03-04T12:30:00Z');
const metric = {
  ui_chart_time_range: 'last_24_hours',
  ui_chart_custom_range_start_at: null,
  ui_chart_custom_range_end_at: null,
} as never;
const noPage = (id: string): never => {
  throw new ApiError('not_found', `query.page_id names page ${id}`, {
    details: [{ field: 'query.page_id', message: 'no such page' }],
  });
};
const field = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return [(err as ApiError).status, (err as ApiError).details as Array<{ field: string }>]
      .flat()
      .map((x: any) => (typeof x === 'number' ? x : x.field));
  }
  return null;
};

test('alert window: start/end, time_range in a time zone, the metric default, custom, page_id', () => {
  assert.deepEqual(
    alertWindow(
      { start_at: '2026-03-01T00:00:00Z', end_at: '2026-03-02T00:00:00Z' } as never,
      metric,
      NOW,
      null,
      noPage,
    ),
    { start: Date.parse('2026-03-01T00:00:00Z'), end: Date.parse('2026-03-02T00:00:00Z') },
  );
  assert.deepEqual(
    alertWindow({} as never, metric, NOW, null, noPage),
    { start: NOW - 86_400_000, end: NOW },
    'the metric chart range',
  );
  assert.deepEqual(
    alertWindow({ time_range: 'today', timezone: 'America/New_York' } as never, metric, NOW, null, noPage),
    { start: Date.parse('2026-03-04T05:00:00Z'), end: NOW },
  );
  assert.deepEqual(
    field(() => alertWindow({ start_at: '2026-03-01T00:00:00Z' } as never, metric, NOW, null, noPage)),
    [400, 'query.end_at'],
  );
  assert.deepEqual(
    field(() =>
      alertWindow(
        { start_at: '2026-03-02T00:00:00Z', end_at: '2026-03-01T00:00:00Z' } as never,
        metric,
        NOW,
        null,
        noPage,
      ),
    ),
    [400, 'query.end_at'],
  );
  assert.deepEqual(
    field(() => alertWindow({ timezone: 'Mars/Base' } as never, metric, NOW, null, noPage)),
    [400, 'query.timezone'],
  );
  assert.deepEqual(
    field(() => alertWindow({ time_range: 'custom' } as never, metric, NOW, null, noPage)),
    [400, 'query.time_range'],
  );
  assert.deepEqual(
    field(() => alertWindow({ page_id: 'pag_x' } as never, metric, NOW, null, noPage)),
    [404, 'query.page_id'],
  );
  const page = () => ({ start: Date.parse('2026-02-01T00:00:00Z'), end: Date.parse('2026-03-01T00:00:00Z') });
  assert.deepEqual(
    alertWindow({ page_id: 'pag_x', time_range: 'custom' } as never, metric, NOW, null, page),
    page(),
    "the page's saved range",
  );
});

test('alert window: a period overlaps when it opened before the end and had not ended before the start', () => {
  const s = Date.parse('2026-03-01T10:00:00Z');
  const e = Date.parse('2026-03-01T11:00:00Z');
  assert.equal(
    overlaps({ created_at: '2026-03-01T09:00:00Z', ended_at: null }, s, e),
    true,
    'opened before, still firing',
  );
  assert.equal(overlaps({ created_at: '2026-03-01T09:00:00Z', ended_at: '2026-03-01T09:59:00Z' }, s, e), false);
  assert.equal(overlaps({ created_at: '2026-03-01T09:00:00Z', ended_at: '2026-03-01T10:00:00Z' }, s, e), true);
  assert.equal(overlaps({ created_at: '2026-03-01T11:00:00Z', ended_at: null }, s, e), false, 'opened at the end');
  assert.equal(overlaps({ created_at: '2026-03-01T10:30:00Z', ended_at: '2026-03-01T10:31:00Z' }, s, e), true);
});
