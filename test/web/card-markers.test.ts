/**
 * Alert markers and monitor thresholds on a page's cards (docs/pages.md, "Alerts and thresholds"):
 * the alerts a card carries are those the alerts list answers for the card's window, the thresholds
 * those of the metric's active threshold monitors on the drawn value; nothing else of a monitor or an
 * alert reaches a public page (no ids, channels, trigger values, labels of series the card does not
 * show); names are escaped in the HTML; the metric's settings switch them off.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { SCRIPT, viewSetup } from '../transform/view-helpers.js';
import { MemoryRollups, type Rec } from '../rollup/aggregation-fixtures.js';
import type { AlertRecord, MonitorRecord } from '../../src/monitor/monitor-records.js';
import { alertMarkers, MAX_ALERT_MARKERS } from '../../src/web/card-markers.js';
import type { CardData } from '../../src/web/card-data.js';

const NOW = Date.parse('2026-04-02T12:00:00Z');
const H = 3_600_000;
const EVIL = '<script>window.__pwned=1</script>';
const at = (h: number) => new Date(NOW - h * H).toISOString();

describe('alert markers and monitor thresholds on a page', () => {
  let srv: TestServer;
  let metricsPath: string;
  let metric: any;
  let plain: any;
  let page: any;
  let monitorsPath: string;
  const monitors: Record<string, any> = {};
  let slot = NOW - 24 * H;

  /** Opens (and maybe ends) one alert of `monitor` through the monitor catalog, as an evaluation would. */
  async function alert(
    monitor: any,
    from: string,
    to: string | null,
    series: { hash: string; label: string | null } = { hash: '__total__', label: null },
  ) {
    const s = srv.sluice.services;
    const m = s.monitors.get(monitor.project_id, monitor.id) as MonitorRecord;
    const res = await s.monitors.recordSlot(
      m,
      (slot += 60_000),
      {
        // An open alert is held by its series' state (so pausing the monitor ends it).
        states:
          to === null
            ? [
                {
                  id: series.hash,
                  monitor_id: m.id,
                  series_hash: series.hash,
                  series_label: series.label,
                  is_firing: true,
                  started_firing_at: from,
                  last_triggered_at: from,
                  last_value: 999,
                  occurrence_timestamps: null,
                  pending_since: null,
                  open_alert_id: null,
                  last_notified_at: null,
                },
              ]
            : [],
        removed: [],
        closed: [],
        opened: [
          {
            key: series.hash,
            series_hash: series.hash,
            series_label: series.label,
            created_at: from,
            ended_at: to,
            trigger_value: 999,
          },
        ],
      },
      s.metrics.get(monitor.project_id, monitor.metric_id)!,
    );
    assert.equal(res.applied, true);
    return res.opened[0]!;
  }

  before(async () => {
    srv = await TestServer.start({ clock: new ManualClock(NOW), env: { SLUICE_PIPELINE: '0' } });
    const setup = await viewSetup(srv);
    const view = ok(
      await srv.post(setup.views, {
        name: 'Requests',
        collection_id: setup.collection.id,
        transform_script: SCRIPT,
        transform_mode: 'manual',
        output_schema: [{ name: 'duration', type: 'number' }],
      }),
      201,
    );
    metricsPath = `/v1/projects/${setup.project.id}/metrics`;
    metric = ok(
      await srv.post(metricsPath, {
        name: 'Latency',
        view_id: view.id,
        value_field: 'duration',
        ui_chart_value: 'sum',
        ui_chart_show_alerts: true,
        ui_chart_show_monitors: true,
      }),
      201,
    );
    plain = ok(
      await srv.post(metricsPath, {
        name: 'Plain',
        view_id: view.id,
        value_field: 'duration',
        ui_chart_show_alerts: false,
        ui_chart_show_monitors: false,
      }),
      201,
    );
    const recs: Rec[] = Array.from({ length: 360 }, (_, i) => ({ series: 'x', t: NOW - 6 * H + i * 60_000, value: 1 }));
    srv.sluice.services.rollups = new MemoryRollups(recs, NOW);
    monitorsPath = `${metricsPath}/${metric.id}/monitors`;
    const make = async (key: string, body: object) => (monitors[key] = ok(await srv.post(monitorsPath, body), 201));
    await make('shown', { name: `Too slow ${EVIL}`, chart_value: 'sum', threshold_value: 250 });
    await make('sustained', {
      name: 'Too quiet',
      chart_value: 'sum',
      condition_type: 'sustained',
      operator: 'lt',
      threshold_value: 5,
      sustained_minutes: 10,
    });
    // Not drawn: another value than the chart's, a condition with no threshold, a paused monitor.
    await make('average', { name: 'Average', chart_value: 'average', threshold_value: 3 });
    await make('existence', { name: 'Any', chart_value: 'count', condition_type: 'existence' });
    await make('paused', { name: 'Paused', chart_value: 'sum', threshold_value: 100 });
    ok(await srv.post(`${monitorsPath}/${monitors.paused.id}/pause`, {}));
    ok(
      await srv.post(`${metricsPath}/${plain.id}/monitors`, { name: 'Plain', chart_value: 'sum', threshold_value: 1 }),
      201,
    );

    const pages = `/v1/projects/${setup.project.id}/pages`;
    page = ok(
      await srv.post(pages, { name: 'Ops', slug: 'ops', visibility: 'public', time_range: 'last_6_hours' }),
      201,
    );
    ok(await srv.post(`${pages}/${page.id}/components`, { metric_id: metric.id }), 201);
    ok(await srv.post(`${pages}/${page.id}/components`, { metric_id: plain.id }), 201);
  });
  after(() => srv.stop());

  test("a card carries the alerts the alerts list answers for its window, and its metric's thresholds", async () => {
    const made = [
      await alert(monitors.shown, at(11), at(10)), // ended before the window: not shown
      await alert(monitors.shown, at(7), at(5)), // ends inside the window
      await alert(monitors.sustained, at(4), at(3.5), { hash: 'h_hidden', label: 'Secret series' }),
      await alert(monitors.shown, at(1), null), // still firing
    ];
    const card = ok(await srv.get('/p/ops/data', { token: null })).cards[0];
    const m = card.markers;
    const listed = ok(
      await srv.get(`${metricsPath}/${metric.id}/alerts?start_at=${card.data.start_at}&end_at=${card.data.end_at}`),
    );
    assert.equal(listed.length, 3);
    assert.deepEqual(
      m.alerts.map((a: any) => [a.start, a.end]),
      listed
        .map((a: any) => [Date.parse(a.created_at), a.ended_at === null ? null : Date.parse(a.ended_at)])
        .sort((x: number[], y: number[]) => x[0]! - y[0]!),
      'the same periods as GET …/alerts over the card window',
    );
    assert.ok(!m.alerts.some((a: any) => a.start === Date.parse(made[0]!.created_at)));
    assert.deepEqual(m.alerts[0], {
      start: Date.parse(at(7)),
      end: Date.parse(at(5)),
      label: `Too slow ${EVIL}`,
      series_hash: '__total__',
      series_label: card.data.series[0].label,
    });
    assert.deepEqual(
      m.alerts[1],
      { start: Date.parse(at(4)), end: Date.parse(at(3.5)), label: 'Too quiet', series_hash: null, series_label: null },
      'a series the card does not show is not named',
    );
    assert.equal(m.alerts[2].end, null, 'still firing');
    assert.deepEqual(m.thresholds, [
      { value: 5, operator: 'lt', label: 'Too quiet' },
      { value: 250, operator: 'gt', label: `Too slow ${EVIL}` },
    ]);

    // Nothing else of the monitors or alerts: no ids, slugs, trigger values, channels or conditions.
    const text = JSON.stringify(m);
    for (const secret of [
      ...Object.values(monitors).flatMap((x: any) => [x.id, x.slug]),
      ...made.map((a) => a.id),
      'Secret series',
      '999',
      'notification',
      'condition',
    ])
      assert.ok(!text.includes(secret), `markers do not carry ${secret}`);
    // A metric that does not ask for them carries none (its monitor exists).
    assert.equal(ok(await srv.get('/p/ops/data', { token: null })).cards[1].markers, null);

    // The HTML page carries the same, with the monitor's name escaped.
    const res = await fetch(`${srv.url}/p/ops`);
    const html = await res.text();
    assert.ok(!html.includes(EVIL), 'no raw <script> from a monitor name');
    assert.equal(html.match(/<script/g)?.length, 2);
    const boot = JSON.parse(/<script type="application\/json" id="sluice-page">([\s\S]*?)<\/script>/.exec(html)![1]!);
    assert.deepEqual(boot.cards[0].markers, m);
  });

  test('an alert that opens or ends, and a threshold that changes, tell open pages to redraw', async () => {
    const s = srv.sluice.services;
    const events: string[] = [];
    const off = s.pageEvents.subscribe(page.id, (e) => events.push(e));
    try {
      s.pageEvents.poll();
      assert.deepEqual(events, [], 'nothing changed, nothing sent');
      await alert(monitors.sustained, at(0.5), null);
      s.pageEvents.poll();
      assert.deepEqual(events, ['data'], 'an alert opened');
      s.pageEvents.poll();
      assert.deepEqual(events, ['data'], 'once');
      await alert(monitors.sustained, at(0.4), at(0.3));
      s.pageEvents.poll();
      assert.deepEqual(events, ['data', 'data'], 'an alert that opened and ended between two looks');
      ok(await srv.post(`${monitorsPath}/${monitors.sustained.id}`, { threshold_value: 6 }));
      s.pageEvents.poll();
      assert.deepEqual(events, ['data', 'data', 'data'], 'a threshold changed (and its open alert ended)');
    } finally {
      off();
    }
  });

  test('markers follow the monitors and the metric settings at once (not cached with the data)', async () => {
    const before = ok(await srv.get('/p/ops/data', { token: null })).cards[0].markers;
    assert.ok(before.alerts.some((a: any) => a.end === null));
    // Pausing ends the open alert now and takes its threshold off.
    (srv.sluice.services.clock as ManualClock).advance(1000);
    ok(await srv.post(`${monitorsPath}/${monitors.shown.id}/pause`, {}));
    const paused = ok(await srv.get('/p/ops/data', { token: null })).cards[0].markers;
    assert.ok(
      paused.alerts.every((a: any) => a.end !== null),
      'the open alert ended',
    );
    assert.deepEqual(
      paused.thresholds.map((t: any) => t.label),
      ['Too quiet'],
    );
    ok(await srv.post(`${metricsPath}/${metric.id}`, { ui_chart_show_alerts: false }));
    const noAlerts = ok(await srv.get('/p/ops/data', { token: null })).cards[0].markers;
    assert.deepEqual(noAlerts.alerts, []);
    assert.equal(noAlerts.thresholds.length, 1);
    ok(await srv.post(`${metricsPath}/${metric.id}`, { ui_chart_show_monitors: false }));
    assert.equal(ok(await srv.get('/p/ops/data', { token: null })).cards[0].markers, null);
  });
});

test('a card carries at most the latest MAX_ALERT_MARKERS periods, oldest first, and the window bounds hold', () => {
  const start = Date.parse('2026-04-01T00:00:00Z');
  const data = {
    start_at: new Date(start).toISOString(),
    end_at: new Date(start + 1000 * 60_000).toISOString(),
    series: [{ hash: 'h1', label: 'one' }],
  } as CardData;
  const alerts = Array.from(
    { length: MAX_ALERT_MARKERS + 50 },
    (_, i) =>
      ({
        id: `alr_${String(i).padStart(20, '0')}`,
        monitor_name: null,
        series_hash: i % 2 ? 'h1' : 'h2',
        series_label: 'stored label',
        created_at: new Date(start + i * 60_000).toISOString(),
        ended_at: new Date(start + i * 60_000 + 30_000).toISOString(),
      }) as AlertRecord,
  ).reverse();
  const edge = [
    // Ended exactly at the start: still overlaps (the alerts list's rule); opened at the end: does not.
    { id: 'alr_edge_start', created_at: new Date(start - 60_000).toISOString(), ended_at: data.start_at },
    { id: 'alr_edge_end', created_at: data.end_at, ended_at: null },
  ] as AlertRecord[];
  const m = alertMarkers([...alerts, ...edge], data);
  assert.equal(m.length, MAX_ALERT_MARKERS);
  assert.ok(
    m.every((a, i) => i === 0 || a.start > m[i - 1]!.start),
    'oldest first',
  );
  assert.equal(m[m.length - 1]!.start, start + (MAX_ALERT_MARKERS + 49) * 60_000, 'the latest kept');
  assert.ok(!m.some((a) => a.start === start - 60_000), 'the oldest dropped past the cap');
  assert.ok(!m.some((a) => a.start === Date.parse(data.end_at)), 'opened at the end: outside');
  assert.deepEqual(
    new Set(m.map((a) => `${a.label}|${a.series_hash}|${a.series_label}`)),
    new Set(['Alert|h1|one', 'Alert|null|null']),
  );
  const few = alertMarkers(edge, data);
  assert.deepEqual(
    few.map((a) => a.start),
    [start - 60_000],
  );
});
