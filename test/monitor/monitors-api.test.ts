import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';
import { fails, ok, otherTeamToken, scopedToken } from '../catalog/helpers.js';
import { viewSetup } from '../transform/view-helpers.js';

const OUT = [
  { name: 'path', type: 'string' },
  { name: 'duration', type: 'number' },
  { name: 'user_id', type: 'string' },
];
const SCRIPT =
  'function transform(r) { return { path: String(r.path), duration: Number(r.duration), user_id: String(r.user_id) }; }';
const CONTROL_PLANE = { env: { SLUICE_PIPELINE: '0' } };

const MONITOR_FIELDS = [
  'object',
  'id',
  'slug',
  'team_id',
  'project_id',
  'metric_id',
  'created_at',
  'updated_at',
  'name',
  'description',
  'status',
  'disabled_reason',
  'chart_value',
  'scope',
  'time_window_minutes',
  'condition_type',
  'operator',
  'threshold_value',
  'sustained_minutes',
  'schedule_cron',
  'alert_mode',
  'expires_at',
  'series_filters',
  'min_occurrences',
  'occurrence_window_minutes',
  'notification_channel_ids',
  'notify_repeat_minutes',
  'condition_description',
  'last_evaluated_at',
  'next_evaluation_at',
  'evaluation_ready',
  'recent_alerts',
  'series_states',
];

/** A project with a view and two metrics: one grouped by path with a value field, one bare count. */
export async function monitorSetup(srv: TestServer) {
  const setup = await viewSetup(srv);
  const view = ok(
    await srv.post(setup.views, {
      name: 'Requests',
      collection_id: setup.collection.id,
      transform_script: SCRIPT,
      transform_mode: 'manual',
      output_schema: OUT,
    }),
    201,
  );
  const metrics = `/v1/projects/${setup.project.id}/metrics`;
  const latency = ok(
    await srv.post(metrics, { name: 'Latency', view_id: view.id, group_by: ['path'], value_field: 'duration' }),
    201,
  );
  const count = ok(await srv.post(metrics, { name: 'Requests', view_id: view.id }), 201);
  return { ...setup, view, latency, count, metrics, monitors: (metricId: string) => `${metrics}/${metricId}/monitors` };
}

// One server for the file (each test makes its own project): a start costs seconds.
const clock = new ManualClock(Date.parse('2026-03-01T10:00:30Z'));
let srv: TestServer;
describe('monitors API', () => {
  before(async () => {
    srv = await TestServer.start({ ...CONTROL_PLANE, clock });
  });
  after(() => srv.stop());

  test('monitors: create with defaults, get, both lists, update, pause, resume, delete', async () => {
    const { project, latency, count, monitors } = await monitorSetup(srv);

    const m = ok(await srv.post(monitors(latency.id), { threshold_value: 250 }), 201);
    assert.deepEqual(Object.keys(m).sort(), [...MONITOR_FIELDS].sort());
    assert.match(m.id, /^mon_[0-9a-z]{20}$/);
    assert.equal(m.object, 'monitor');
    assert.equal(m.project_id, project.id);
    assert.equal(m.metric_id, latency.id);
    assert.equal(m.status, 'active');
    assert.equal(m.chart_value, 'sum');
    assert.equal(m.scope, 'total');
    assert.equal(m.condition_type, 'threshold');
    assert.equal(m.operator, 'gt');
    assert.equal(m.schedule_cron, '* * * * *');
    assert.equal(m.alert_mode, 'spanning');
    assert.equal(
      m.name,
      'Latency: sum since the metric was created > 250',
      'a name made from the metric and the condition',
    );
    assert.equal(m.slug, 'latency-sum-since-the-metric-was-created-250');
    assert.equal(m.condition_description, 'sum since the metric was created > 250');
    assert.equal(m.next_evaluation_at, '2026-03-01T10:01:00.000Z', 'evaluates from the next slot at once');
    assert.equal(m.last_evaluated_at, null);
    assert.deepEqual(m.recent_alerts, []);
    assert.deepEqual(m.series_states, []);
    assert.deepEqual(ok(await srv.get(`${monitors(latency.id)}/${m.id}`)), m);

    clock.advance(1000);
    const p95 = ok(
      await srv.post(monitors(latency.id), {
        name: 'Slow checkout',
        description: 'p95 above 800 ms for 10 minutes',
        chart_value: 'p95',
        scope: 'each_series',
        time_window_minutes: 5,
        condition_type: 'sustained',
        operator: 'gte',
        threshold_value: 800,
        sustained_minutes: 10,
        schedule_cron: '*/5 * * * *',
        alert_mode: 'spanning',
        expires_at: '2027-01-01T00:00:00Z',
        series_filters: { include: { path: ['/checkout', '/cart'] } },
        metric_id: latency.id,
      }),
      201,
    );
    assert.equal(p95.slug, 'slow-checkout');
    assert.equal(p95.next_evaluation_at, '2026-03-01T10:05:00.000Z');
    assert.equal(p95.condition_description, 'p95 over the last 5 minutes >= 800 for 10 minutes, for each series');
    clock.advance(1000);
    const same = ok(await srv.post(monitors(latency.id), { name: 'Slow checkout', threshold_value: 1 }), 201);
    assert.equal(same.slug, 'slow-checkout-2', 'slugs are unique within the project');
    const paused = ok(
      await srv.post(monitors(count.id), {
        name: 'No traffic',
        status: 'paused',
        condition_type: 'absence',
        chart_value: 'count',
        time_window_minutes: 15,
      }),
      201,
    );
    assert.equal(paused.status, 'paused');
    assert.equal(paused.next_evaluation_at, null);

    // Lists: flat (filters metric_id, status), nested; name order by default, created_at on request.
    const flat = `/v1/projects/${project.id}/monitors`;
    assert.deepEqual(
      ok(await srv.get(flat)).map((x: any) => x.name),
      ['Latency: sum since the metric was created > 250', 'No traffic', 'Slow checkout', 'Slow checkout'],
    );
    assert.deepEqual(
      ok(await srv.get(`${flat}?metric_id=${count.id}`)).map((x: any) => x.id),
      [paused.id],
    );
    assert.deepEqual(
      ok(await srv.get(`${flat}?status=paused`)).map((x: any) => x.id),
      [paused.id],
    );
    assert.deepEqual(
      ok(await srv.get(`${monitors(latency.id)}?order_by=created_at&sort=desc`)).map((x: any) => x.id),
      [same.id, p95.id, m.id],
    );
    const page = await srv.get(`${flat}?limit=2`);
    assert.equal(ok(page).length, 2);
    assert.ok(page.body.pagination?.next_cursor);

    // Update: fields beyond those shown; metric_id fixed; status through pause/resume only.
    clock.advance(1000);
    const up = ok(
      await srv.post(`${monitors(latency.id)}/${m.id}`, {
        name: 'Latency total',
        threshold_value: 300,
        schedule_cron: '0 * * * *',
        time_window_minutes: 60,
      }),
    );
    assert.equal(up.name, 'Latency total');
    assert.equal(up.slug, m.slug, 'the slug stays when the name changes');
    assert.equal(up.threshold_value, 300);
    assert.equal(up.next_evaluation_at, '2026-03-01T11:00:00.000Z');
    assert.ok(up.updated_at > m.updated_at);
    fails(await srv.post(`${monitors(latency.id)}/${m.id}`, {}), 400, 'request_validation_failed', 'body');
    fails(
      await srv.post(`${monitors(latency.id)}/${m.id}`, { metric_id: count.id }),
      400,
      'request_validation_failed',
      'body.metric_id',
    );
    fails(
      await srv.post(`${monitors(latency.id)}/${m.id}`, { status: 'paused' }),
      400,
      'request_validation_failed',
      'body.status',
    );
    fails(
      await srv.post(`${monitors(latency.id)}/${m.id}`, { threshold_value: null }),
      400,
      'request_validation_failed',
      'body.threshold_value',
    );

    // Pause and resume: idempotent; paused has no next evaluation.
    const pz = ok(await srv.post(`${monitors(latency.id)}/${m.id}/pause`));
    assert.equal(pz.status, 'paused');
    assert.equal(pz.next_evaluation_at, null);
    assert.deepEqual(
      ok(await srv.post(`${monitors(latency.id)}/${m.id}/pause`)),
      pz,
      'pausing a paused monitor changes nothing',
    );
    const rs = ok(await srv.post(`${monitors(latency.id)}/${m.id}/resume`));
    assert.equal(rs.status, 'active');
    assert.equal(rs.next_evaluation_at, '2026-03-01T11:00:00.000Z');
    assert.deepEqual(ok(await srv.post(`${monitors(latency.id)}/${m.id}/resume`)), rs);

    // A monitor is found only under its own metric, project and team.
    fails(await srv.get(`${monitors(count.id)}/${m.id}`), 404, 'not_found');
    fails(await srv.get(`${monitors(latency.id)}/mon_00000000000000000000`), 404, 'not_found');
    fails(await srv.get(`${monitors(latency.id)}/${m.id}`, { token: await otherTeamToken(srv) }), 404, 'not_found');
    // Scopes: monitors:read lists, monitors:write creates, monitors:delete deletes.
    const reader = await scopedToken(srv, { projects: ['read'], metrics: ['read'], monitors: ['read'] });
    ok(await srv.get(flat, { token: reader }));
    fails(await srv.post(monitors(latency.id), { threshold_value: 1 }, { token: reader }), 403, 'forbidden');
    fails(await srv.delete(`${monitors(latency.id)}/${m.id}`, { token: reader }), 403, 'forbidden');

    // Delete.
    assert.equal(ok(await srv.delete(`${monitors(latency.id)}/${m.id}`)), null);
    fails(await srv.get(`${monitors(latency.id)}/${m.id}`), 404, 'not_found');
    assert.equal(ok(await srv.get(flat)).length, 3);
  });

  test('monitors: every create/preview rule and limit is a 400 naming the field', async () => {
    clock.set(Date.parse('2026-03-01T10:00:30Z'));
    const { latency, count, monitors } = await monitorSetup(srv);
    const L = monitors(latency.id);
    const C = monitors(count.id);
    const cases: Array<[string, string, unknown, string]> = [
      // Shapes and limits.
      ['name too short', L, { name: 'x', threshold_value: 1 }, 'body.name'],
      ['name too long', L, { name: 'x'.repeat(65), threshold_value: 1 }, 'body.name'],
      ['status disabled', L, { status: 'disabled', threshold_value: 1 }, 'body.status'],
      ['unknown chart value', L, { chart_value: 'median', threshold_value: 1 }, 'body.chart_value'],
      ['window 0', L, { time_window_minutes: 0, threshold_value: 1 }, 'body.time_window_minutes'],
      ['window over a year', L, { time_window_minutes: 525601, threshold_value: 1 }, 'body.time_window_minutes'],
      ['window not an integer', L, { time_window_minutes: 1.5, threshold_value: 1 }, 'body.time_window_minutes'],
      ['threshold a string', L, { threshold_value: 'NaN' }, 'body.threshold_value'],
      ['unknown field', L, { threshold_value: 1, severity: 'high' }, 'body.severity'],
      ['cron too long', L, { threshold_value: 1, schedule_cron: `${'1,'.repeat(64)}1 * * * *` }, 'body.schedule_cron'],
      ['empty cron', L, { threshold_value: 1, schedule_cron: '' }, 'body.schedule_cron'],
      ['metric_id of another metric', L, { threshold_value: 1, metric_id: count.id }, 'body.metric_id'],
      ['malformed metric_id', L, { threshold_value: 1, metric_id: 'nope' }, 'body.metric_id'],
      // Rule 1: absence needs count and a finite window.
      [
        'absence with sum',
        L,
        { condition_type: 'absence', chart_value: 'sum', time_window_minutes: 5 },
        'body.chart_value',
      ],
      ['absence without window', C, { condition_type: 'absence', chart_value: 'count' }, 'body.time_window_minutes'],
      // Rule 2.
      ['threshold without value', L, { condition_type: 'threshold' }, 'body.threshold_value'],
      ['sustained without minutes', L, { condition_type: 'sustained', threshold_value: 1 }, 'body.sustained_minutes'],
      ['sustained_minutes on threshold', L, { threshold_value: 1, sustained_minutes: 5 }, 'body.sustained_minutes'],
      [
        'threshold on existence',
        C,
        { condition_type: 'existence', chart_value: 'count', threshold_value: 3 },
        'body.threshold_value',
      ],
      // Rule 3.
      ['occurrences alone', L, { threshold_value: 1, min_occurrences: 3 }, 'body.occurrence_window_minutes'],
      ['occurrence window alone', L, { threshold_value: 1, occurrence_window_minutes: 30 }, 'body.min_occurrences'],
      [
        'occurrences with sustained',
        L,
        {
          condition_type: 'sustained',
          threshold_value: 1,
          sustained_minutes: 5,
          min_occurrences: 3,
          occurrence_window_minutes: 30,
        },
        'body.min_occurrences',
      ],
      // Rule 4: five fields, UTC, one slot a minute at most.
      ['six-field cron', L, { threshold_value: 1, schedule_cron: '0 * * * * *' }, 'body.schedule_cron'],
      ['@reboot', L, { threshold_value: 1, schedule_cron: '@reboot' }, 'body.schedule_cron'],
      ['garbage cron', L, { threshold_value: 1, schedule_cron: 'every minute' }, 'body.schedule_cron'],
      ['impossible cron', L, { threshold_value: 1, schedule_cron: '61 * * * *' }, 'body.schedule_cron'],
      // Rule 5.
      ['active and expired', L, { threshold_value: 1, expires_at: '2026-03-01T10:00:00Z' }, 'body.expires_at'],
      // Ours: the value must be computable, filters name group_by fields.
      ['sum without value field', C, { threshold_value: 1 }, 'body.chart_value'],
      ['count_unique without unique field', L, { chart_value: 'count_unique', threshold_value: 1 }, 'body.chart_value'],
      [
        'filter outside group_by',
        L,
        { scope: 'each_series', threshold_value: 1, series_filters: { include: { user_id: ['u1'] } } },
        'body.series_filters.include.user_id',
      ],
      [
        'filter on an ungrouped metric',
        C,
        { chart_value: 'count', threshold_value: 1, series_filters: { exclude: { path: ['/'] } } },
        'body.series_filters.exclude.path',
      ],
      [
        'filter values not an array',
        L,
        { threshold_value: 1, series_filters: { include: { path: '/a' } } },
        'body.series_filters',
      ],
    ];
    for (const [what, path, body, field] of cases) {
      const res = await srv.post(path, body);
      assert.equal(res.status, 400, `${what}: ${JSON.stringify(res.body)}`);
      fails(res, 400, 'request_validation_failed', field);
      assert.match(res.body.error!.message, /\S/, what);
      // Preview has the same rules (it answers 400 before it would need the aggregation).
      if (!['status disabled'].includes(what))
        fails(await srv.post(`${path}/preview`, body), 400, 'request_validation_failed', field);
    }
    // A number too large for a double reads as Infinity: refused like NaN would be.
    fails(
      await srv.call('POST', L, { raw: '{"threshold_value": 1e999}', headers: { 'content-type': 'application/json' } }),
      400,
      'request_validation_failed',
      'body.threshold_value',
    );
    fails(
      await srv.call('POST', L, {
        raw: '{"threshold_value": -1e999}',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'request_validation_failed',
      'body.threshold_value',
    );
    // A paused monitor may carry a past expiry (rule 5 is about being active).
    ok(await srv.post(L, { threshold_value: 1, status: 'paused', expires_at: '2026-03-01T10:00:00Z' }), 201);
    // Resuming it after its expiry is refused with the reason.
    const expired = ok(
      await srv.post(L, { threshold_value: 1, status: 'paused', expires_at: '2026-03-01T09:00:00Z', name: 'Expired' }),
      201,
    );
    fails(await srv.post(`${L}/${expired.id}/resume`), 409, 'conflict');
    // Accepted edges: largest window, six-month sustained, every operator, daily cron.
    for (const operator of ['gt', 'gte', 'lt', 'lte', 'eq', 'neq'])
      ok(
        await srv.post(L, { operator, threshold_value: -1.5, time_window_minutes: 525600, schedule_cron: '0 0 * * *' }),
        201,
      );
    ok(await srv.post(C, { condition_type: 'existence', chart_value: 'count', scope: 'any_series' }), 201);
  });
});
