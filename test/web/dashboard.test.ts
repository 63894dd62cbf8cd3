/**
 * The dashboard's server side without a browser (docs/pages.md): a page's HTML with its first data
 * inline, equal to what the aggregation API answers; everything from users escaped; the page-scoped
 * read path that answers no parameter that could widen it; private pages behind a session.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { TestServer } from '../helpers/server.js';
import { fails, ok, otherTeamToken } from '../catalog/helpers.js';
import { SCRIPT, viewSetup } from '../transform/view-helpers.js';
import { MemoryRollups, type Rec } from '../rollup/aggregation-fixtures.js';
import { intervalForWidth } from '../../src/web/card-data.js';
import { gunzipSync } from 'node:zlib';
import { request } from 'node:http';

const NOW = Date.parse('2026-04-02T12:00:00Z');
const EVIL = '<script>window.__pwned=1</script>';

async function html(srv: TestServer, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(srv.url + path, { headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The JSON a page carries inline. */
function bootOf(text: string): any {
  const m = /<script type="application\/json" id="sluice-page">([\s\S]*?)<\/script>/.exec(text);
  assert.ok(m, 'the page carries its data inline');
  return JSON.parse(m[1]!);
}

describe('dashboard pages (server side)', () => {
  let srv: TestServer;
  let pages: string;
  let metricsPath: string;
  let metric: any;
  let gauge: any;
  let page: any;
  let comps: any[];
  const from = NOW - 3 * 3_600_000;
  // Two records a minute over the last three hours: values 1, 2, 3, …
  const recs: Rec[] = Array.from({ length: 360 }, (_, i) => ({
    series: 'x',
    t: from + Math.floor(i / 2) * 60_000,
    value: i + 1,
  }));
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
      await srv.post(metricsPath, { name: `Requests ${EVIL}`, view_id: view.id, ui_value_unit: '<script>x</script>' }),
      201,
    );
    gauge = ok(
      await srv.post(metricsPath, {
        name: 'Latency',
        view_id: view.id,
        value_field: 'duration',
        ui_chart_type: 'gauge',
        ui_chart_value: 'average',
      }),
      201,
    );
    srv.sluice.services.rollups = new MemoryRollups(recs, NOW);
    pages = `/v1/projects/${setup.project.id}/pages`;
    page = ok(
      await srv.post(pages, {
        name: `Ops ${EVIL}`,
        slug: 'ops',
        description: `About ${EVIL}`,
        visibility: 'public',
        time_range: 'last_6_hours',
      }),
      201,
    );
    comps = [
      ok(await srv.post(`${pages}/${page.id}/components`, { metric_id: metric.id }), 201),
      ok(await srv.post(`${pages}/${page.id}/components`, { metric_id: gauge.id, ui_card_size: '1/2' }), 201),
    ];
  });
  after(() => srv.stop());

  test('a public page: HTML with every card and its first data inline, equal to the aggregation API', async () => {
    const res = await html(srv, '/p/ops');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(res.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    assert.match(res.text, /<script type="module" src="\/assets\/page-[A-Z0-9]{8}\.js"><\/script>/);
    assert.match(res.text, /<link rel="stylesheet" href="\/assets\/page-[A-Z0-9]{8}\.css">/);
    const boot = bootOf(res.text);
    assert.equal(boot.window.time_range, 'last_6_hours');
    assert.deepEqual(
      boot.cards.map((c: any) => c.id),
      comps.map((c) => c.id),
    );
    assert.deepEqual(
      boot.cards.map((c: any) => c.metric.ui_chart_type),
      ['line', 'gauge'],
    );
    for (const card of boot.cards) {
      // No ids, view, filters or fields of the metric reach the page.
      assert.deepEqual(
        Object.keys(card.metric).filter((k) => /id$|filters|view|field|group_by/.test(k)),
        [],
      );
      const m = card.id === comps[0].id ? metric : gauge;
      const api = ok(
        await srv.get(`${metricsPath}/${m.id}/aggregation?time_range=last_6_hours&interval=${card.data.interval}`),
      );
      assert.equal(card.data.start_at, api.start_at);
      assert.equal(card.data.end_at, api.end_at);
      assert.equal(card.data.series.length, api.series.length);
      const rows = Object.entries(api.series[0].records as Record<string, number[]>);
      assert.deepEqual(
        card.data.times,
        rows.map(([k]) => Date.parse(k)),
      );
      assert.deepEqual(
        card.data.series[0].values,
        rows.map(([, v]) => v[0]),
      );
      // Never more buckets than the card is wide (1200 px for a full card, half for a half card).
      assert.ok(card.data.times.length <= (card.size === '1/2' ? 600 : 1200));
    }
    assert.equal(boot.cards[0].data.interval, 'minute', '6 hours = 360 minutes fit in 1200 px');
  });

  test('script injection through page and metric names, units and descriptions is escaped everywhere', async () => {
    const res = await html(srv, '/p/ops');
    assert.ok(!res.text.includes(EVIL) && !res.text.includes('<script>x'), 'no raw <script> from user text');
    assert.equal(res.text.match(/<script/g)?.length, 2, 'only the bundle and the inline data are scripts');
    assert.ok(res.text.includes('&lt;script&gt;window.__pwned=1&lt;/script&gt;'));
    assert.ok(res.text.includes('\\u003cscript\\u003e'), 'inside the JSON, < is escaped');
    const boot = bootOf(res.text);
    assert.equal(boot.cards[0].metric.name, `Requests ${EVIL}`, 'the data itself is intact');
    assert.equal(boot.cards[0].data.series[0].label, `Requests ${EVIL}`);
    const embed = await html(srv, `/p/ops/c/${comps[0].id}`);
    assert.ok(!embed.text.includes(EVIL));
  });

  test('the page-scoped read path answers no parameter that would widen it', async () => {
    for (const q of [
      `metric_id=${gauge.id}`,
      'series=__total__',
      'values=count,sum',
      'max_series=50',
      `page_id=${page.id}`,
      'raw=1',
      'records=1',
      'coverage_mode=observed',
      'regression=linear',
    ]) {
      const field = `query.${q.split('=')[0]}`;
      const page400 = await html(srv, `/p/ops?${q}`);
      assert.equal(page400.status, 400, q);
      assert.match(page400.text, /data-error-code="request_validation_failed"/);
      const data = await srv.get(`/p/ops/data?${q}`, { token: null });
      fails(data, 400, 'request_validation_failed', field);
    }
    fails(await srv.get('/p/ops/data?width=10000', { token: null }), 400, 'request_validation_failed', 'query.width');
    fails(
      await srv.get('/p/ops/data?timezone=Nowhere', { token: null }),
      400,
      'request_validation_failed',
      'query.timezone',
    );
    fails(
      await srv.get('/p/ops/data?time_range=custom', { token: null }),
      400,
      'request_validation_failed',
      'query.time_range',
    );
    // A component of another page (or none) is not on this one.
    const other = ok(await srv.post(pages, { name: 'Other', slug: 'other', visibility: 'public' }), 201);
    const foreign = ok(await srv.post(`${pages}/${other.id}/components`, { metric_id: gauge.id }), 201);
    assert.equal((await html(srv, `/p/ops/c/${foreign.id}`)).status, 404);
    fails(await srv.get(`/p/ops/c/${foreign.id}/data`, { token: null }), 404, 'not_found');
    fails(await srv.get('/p/ops/c/comp_00000000000000000000/data', { token: null }), 404, 'not_found');
    const one = ok(await srv.get(`/p/ops/c/${comps[1].id}/data`, { token: null }));
    assert.deepEqual(
      one.cards.map((c: any) => c.id),
      [comps[1].id],
    );
    assert.equal((await html(srv, '/p/nope')).status, 404);
  });

  test('range, zone and width: the data endpoint reads the window asked for, never more buckets than pixels', async () => {
    const d = ok(await srv.get('/p/ops/data?time_range=last_hour&width=50', { token: null }));
    assert.equal(d.window.time_range, 'last_hour');
    const card = d.cards[0];
    assert.equal(card.data.interval, 'hour', '60 minutes do not fit in 50 px: hours');
    assert.ok(card.data.times.length <= 50);
    const wide = ok(await srv.get('/p/ops/data?time_range=last_hour&width=800&timezone=Asia/Kolkata', { token: null }));
    assert.equal(wide.cards[0].data.interval, 'minute');
    assert.equal(wide.window.timezone, 'Asia/Kolkata');
    const half = wide.cards[1];
    assert.equal(half.size, '1/2');
    const custom = ok(
      await srv.get(
        '/p/ops/data?time_range=custom&start_at=2026-04-02T10:00:00Z&end_at=2026-04-02T11:00:00Z&width=1000',
        { token: null },
      ),
    );
    assert.equal(custom.cards[0].data.start_at, '2026-04-02T10:00:00.000Z');
    assert.equal(custom.cards[0].data.times.length, 60);
    assert.deepEqual(custom.cards[0].data.series[0].values.slice(0, 2), [2, 2], 'two records a minute');
    // all_time: where the data starts only the aggregation knows; a card still gets no more buckets than pixels.
    const all = ok(await srv.get('/p/ops/data?time_range=all_time&width=60', { token: null }));
    assert.equal(all.cards[0].data.interval, 'hour', 'three hours of minutes do not fit 60 px');
    assert.ok(all.cards[0].data.times.length <= 60);
    const wideAll = ok(await srv.get('/p/ops/data?time_range=all_time&width=1200', { token: null })).cards[0].data;
    assert.ok(
      wideAll.times.length <= 1200 && wideAll.times.length >= all.cards[0].data.times.length,
      'a wider card gets the finer interval auto picks',
    );
    assert.equal(intervalForWidth(0, 7 * 86_400_000, 1200), 'hour');
    assert.equal(intervalForWidth(0, 7 * 86_400_000, 100), 'day');
    assert.equal(
      intervalForWidth(0, 86_400_000, 1441),
      'minute',
      'a day of minutes is 1440 buckets, and one more when it does not start on one',
    );
    assert.equal(intervalForWidth(0, 86_400_000, 1400), 'hour');
  });

  test('sweep: every web route of a page refuses widening parameters, foreign components, and a private page without its team', async () => {
    const routes = srv.sluice.router.routes.filter((r) => r.def.web && r.def.path.startsWith('/p/'));
    assert.ok(routes.length >= 5, routes.map((r) => r.endpoint).join(', '));
    const priv = ok(await srv.post(pages, { name: 'Sweep private', slug: 'sweep-private' }), 201);
    const privComp = ok(await srv.post(`${pages}/${priv.id}/components`, { metric_id: metric.id }), 201);
    const stranger = await otherTeamToken(srv);
    const widening = [
      `metric_id=${gauge.id}`,
      'series=__total__',
      'values=sum',
      'max_series=50',
      `page_id=${page.id}`,
      `project_id=${page.project_id}`,
      'records=1',
      'fields=duration',
    ];
    for (const r of routes) {
      const path = (slug: string, comp: string) => r.def.path.replace(':slug', slug).replace(':component_id', comp);
      for (const q of widening) {
        const res = await fetch(`${srv.url}${path('ops', comps[0].id)}?${q}`);
        assert.equal(res.status, 400, `${r.endpoint}?${q}`);
        await res.body?.cancel();
      }
      if (r.def.path.includes(':component_id')) {
        const res = await fetch(`${srv.url}${path('ops', privComp.id)}`);
        assert.equal(res.status, 404, `${r.endpoint}: a component of another page`);
        await res.body?.cancel();
      }
      for (const [headers, status] of [
        [{}, 401],
        [{ authorization: `Bearer ${stranger}` }, 404],
      ] as const) {
        const res = await fetch(`${srv.url}${path('sweep-private', privComp.id)}`, { headers });
        assert.equal(res.status, status, `${r.endpoint} on a private page with ${JSON.stringify(headers)}`);
        const text = await res.text();
        assert.ok(!text.includes('Requests'), `${r.endpoint}: nothing of the page leaks`);
      }
    }
  });

  test("the page's data is sent gzip-compressed when the browser accepts it", async () => {
    const raw = await new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
      request(`${srv.url}/p/ops/data?width=1200`, { headers: { 'accept-encoding': 'gzip, br' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      })
        .on('error', reject)
        .end();
    });
    assert.equal(raw.headers['content-encoding'], 'gzip');
    assert.equal(raw.headers['content-type'], 'application/json; charset=utf-8');
    const text = gunzipSync(raw.body).toString('utf8');
    assert.ok(raw.body.length < text.length / 3, `${raw.body.length} bytes for ${text.length}`);
    const env = JSON.parse(text);
    assert.equal(env.status, 200);
    assert.equal(env.data.cards.length, 2);
  });

  test('a private page: sign-in form without a session, the page with one, 404 to another team', async () => {
    const priv = ok(await srv.post(pages, { name: 'Private', slug: 'private' }), 201);
    ok(await srv.post(`${pages}/${priv.id}/components`, { metric_id: metric.id }), 201);
    const anon = await html(srv, '/p/private');
    assert.equal(anon.status, 401);
    assert.match(anon.text, /<form id="sign-in"/);
    assert.ok(!anon.text.includes('sluice-page'), 'no data without a session');
    fails(await srv.get('/p/private/data', { token: null }), 401, 'sign_in_required');
    assert.equal((await html(srv, `/p/private/c/${comps[0].id}`)).status, 401);

    const signIn = await fetch(`${srv.url}/web/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@localhost', password: 'admin-password' }),
    });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    const signed = await html(srv, '/p/private', { cookie });
    assert.equal(signed.status, 200);
    const boot = bootOf(signed.text);
    assert.equal(boot.cards.length, 1);
    assert.match(boot.csrf, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(bootOf((await html(srv, '/p/ops', { cookie })).text).csrf, boot.csrf);
    assert.equal(bootOf((await html(srv, '/p/ops')).text).csrf, null);
    // An API key of another team reads nothing of it; a key of the team with pages:read does.
    assert.equal((await html(srv, '/p/private', { authorization: `Bearer ${await otherTeamToken(srv)}` })).status, 404);
    assert.equal(
      (await html(srv, '/p/private', { authorization: 'Bearer slk_test_bootstrap_key_0000000000000000000' })).status,
      200,
    );
    // A bad cookie is no session: the form again.
    assert.equal((await html(srv, '/p/private', { cookie: 'sluice_session=sls_nope' })).status, 401);
  });
});
