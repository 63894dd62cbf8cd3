import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { fails, ok, otherTeamToken, scopedToken } from '../catalog/helpers.js';
import { MAX_COMPONENTS_PER_PAGE } from '../../src/catalog/pages.js';
import { pageSetup } from './helpers.js';

const PAGE_FIELDS = [
  'object',
  'id',
  'team_id',
  'project_id',
  'name',
  'slug',
  'description',
  'visibility',
  'url',
  'time_range',
  'custom_range_start_at',
  'custom_range_end_at',
  'timezone',
  'domain_ids',
  'component_count',
  'refreshed_at',
  'created_at',
  'updated_at',
];

describe('pages API', () => {
  let srv: TestServer;
  let s: Awaited<ReturnType<typeof pageSetup>>;
  let other: Awaited<ReturnType<typeof pageSetup>>;
  before(async () => {
    srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
    s = await pageSetup(srv);
    other = await pageSetup(srv, { name: 'Other project', metrics: 1 });
  });
  after(() => srv.stop());

  test('create with defaults, get, list, update; the slug comes from the name', async () => {
    const page = ok(await srv.post(s.pages, { name: 'Checkout — Health!' }), 201);
    assert.deepEqual(Object.keys(page).sort(), [...PAGE_FIELDS, 'components'].sort());
    assert.match(page.id, /^pg_[0-9a-z]{20}$/);
    assert.equal(page.slug, 'checkout-health');
    assert.equal(page.visibility, 'private');
    assert.equal(page.time_range, 'last_24_hours');
    assert.equal(page.timezone, 'UTC');
    assert.equal(page.description, null);
    assert.deepEqual(page.domain_ids, []);
    assert.deepEqual(page.components, []);
    assert.equal(page.url, `${srv.config.publicUrl}/p/checkout-health`);
    assert.deepEqual(ok(await srv.get(`${s.pages}/${page.id}`)), page);
    const list = ok(await srv.get(s.pages));
    assert.ok(list.some((p: any) => p.id === page.id && p.component_count === 0 && !('components' in p)));

    const updated = ok(
      await srv.post(`${s.pages}/${page.id}`, {
        description: 'Orders',
        visibility: 'public',
        timezone: 'Europe/Berlin',
        time_range: 'custom',
        custom_range_start_at: '2026-01-01T00:00:00Z',
        custom_range_end_at: '2026-01-08T00:00:00Z',
      }),
    );
    assert.equal(updated.visibility, 'public');
    assert.equal(updated.custom_range_start_at, '2026-01-01T00:00:00.000Z');
    assert.equal(updated.time_range, 'custom');
    // A second page with the same name gets the next free slug.
    assert.equal(ok(await srv.post(s.pages, { name: 'Checkout health' }), 201).slug, 'checkout-health-2');
  });

  test('bad input: 400 naming the field; duplicate slug 409; unknown page 404', async () => {
    fails(await srv.post(s.pages, {}), 400, 'request_validation_failed', 'body.name');
    fails(await srv.post(s.pages, { name: 'x', slug: 'Has Spaces' }), 400, 'request_validation_failed', 'body.slug');
    fails(await srv.post(s.pages, { name: 'x', slug: '-edge' }), 400, 'request_validation_failed', 'body.slug');
    fails(
      await srv.post(s.pages, { name: 'x', visibility: 'secret' }),
      400,
      'request_validation_failed',
      'body.visibility',
    );
    fails(
      await srv.post(s.pages, { name: 'x', timezone: 'Mars/Olympus' }),
      400,
      'request_validation_failed',
      'body.timezone',
    );
    fails(
      await srv.post(s.pages, { name: 'x', time_range: 'custom' }),
      400,
      'request_validation_failed',
      'body.time_range',
    );
    fails(
      await srv.post(s.pages, { name: 'x', custom_range_start_at: '2026-01-01T00:00:00Z' }),
      400,
      'request_validation_failed',
      'body.custom_range_end_at',
    );
    fails(
      await srv.post(s.pages, {
        name: 'x',
        custom_range_start_at: '2026-01-02T00:00:00Z',
        custom_range_end_at: '2026-01-01T00:00:00Z',
      }),
      400,
      'request_validation_failed',
      'body.custom_range_end_at',
    );
    fails(await srv.post(s.pages, { name: 'x', colour: 'red' }), 400, 'request_validation_failed', 'body.colour');
    ok(await srv.post(s.pages, { name: 'Ops', slug: 'ops' }), 201);
    fails(await srv.post(s.pages, { name: 'Ops again', slug: 'ops' }), 409, 'conflict', 'body.slug');
    const second = ok(await srv.post(s.pages, { name: 'Ops 2', slug: 'ops-two' }), 201);
    fails(await srv.post(`${s.pages}/${second.id}`, { slug: 'ops' }), 409, 'conflict', 'body.slug');
    fails(await srv.post(`${s.pages}/${second.id}`, {}), 400, 'request_validation_failed', 'body');
    fails(await srv.get(`${s.pages}/pg_00000000000000000000`), 404, 'not_found');
    fails(await srv.get(`${s.pages}/nope`), 404, 'not_found');
    fails(await srv.delete(`${s.pages}/pg_00000000000000000000`), 404, 'not_found');
    // Another project's page is not this project's.
    fails(await srv.get(`${other.pages}/${second.id}`), 404, 'not_found');
  });

  test('slugs are unique per project; the first page with a slug holds /p/<slug>, every page answers at /p/<page id>', async () => {
    const bootName = async (address: string) => {
      const res = await fetch(`${srv.url}/p/${address}`);
      const text = await res.text();
      if (res.status !== 200) return res.status;
      return JSON.parse(/<script type="application\/json" id="sluice-page">([\s\S]*?)<\/script>/.exec(text)![1]!).name;
    };
    const first = ok(await srv.post(s.pages, { name: 'Status A', slug: 'status', visibility: 'public' }), 201);
    fails(await srv.post(s.pages, { name: 'Status again', slug: 'status' }), 409, 'conflict', 'body.slug');
    // Another project may use the same slug: its page is served at its id (the short address stays the first's).
    const second = ok(await srv.post(other.pages, { name: 'Status B', slug: 'status', visibility: 'public' }), 201);
    assert.equal(second.slug, 'status');
    assert.equal(first.url, `${srv.config.publicUrl}/p/status`);
    assert.equal(second.url, `${srv.config.publicUrl}/p/${second.id}`);
    assert.equal(await bootName('status'), 'Status A', 'old links keep working');
    assert.equal(await bootName(first.id), 'Status A');
    assert.equal(await bootName(second.id), 'Status B');
    ok(await srv.get(`/p/${second.id}/data`, { token: null }));
    assert.equal((await fetch(`${srv.url}/p/pg_00000000000000000000`)).status, 404);
    // A default slug is free in the project and server-wide, so it gets its short address.
    const named = ok(await srv.post(other.pages, { name: 'Status' }), 201);
    assert.equal(named.slug, 'status-2');
    assert.equal(named.url, `${srv.config.publicUrl}/p/status-2`);
    // Renaming: the old short address is freed; a page of the project cannot take a slug the project has.
    fails(await srv.post(`${other.pages}/${named.id}`, { slug: 'status' }), 409, 'conflict', 'body.slug');
    const moved = ok(await srv.post(`${s.pages}/${first.id}`, { slug: 'status-a' }));
    assert.equal(moved.url, `${srv.config.publicUrl}/p/status-a`);
    assert.equal(await bootName('status'), 404, 'a freed short address names no page');
    // The other project's page takes the free short address by saving its slug again.
    assert.equal(ok(await srv.get(`${other.pages}/${second.id}`)).url, `${srv.config.publicUrl}/p/${second.id}`);
    assert.equal(
      ok(await srv.post(`${other.pages}/${second.id}`, { slug: 'status' })).url,
      `${srv.config.publicUrl}/p/status`,
    );
    assert.equal(await bootName('status'), 'Status B');
    assert.equal(await bootName('status-a'), 'Status A');
    // Deleting a page frees its short address and its slug in the project.
    ok(await srv.delete(`${other.pages}/${second.id}`));
    assert.equal(await bootName('status'), 404);
    assert.equal(
      ok(await srv.post(s.pages, { name: 'Status C', slug: 'status' }), 201).url,
      `${srv.config.publicUrl}/p/status`,
    );
  });

  test('components: same-project metric, card size, order, limit, update, delete', async () => {
    const page = ok(await srv.post(s.pages, { name: 'Cards' }), 201);
    const comps = `${s.pages}/${page.id}/components`;
    const [m0, m1] = s.metrics;
    const a = ok(await srv.post(comps, { metric_id: m0.id }), 201);
    assert.equal(a.object, 'component');
    assert.match(a.id, /^comp_[0-9a-z]{20}$/);
    assert.equal(a.page_id, page.id);
    assert.equal(a.ui_card_size, '1/1');
    assert.equal(a.ui_sort_index, 0);
    assert.equal(a.metric.id, m0.id);
    assert.equal(a.metric.object, 'metric');
    const b = ok(await srv.post(comps, { metric_id: m1.id, ui_card_size: '1/2', page_id: page.id }), 201);
    assert.equal(b.ui_sort_index, 1, 'a new card goes last');

    fails(
      await srv.post(comps, { metric_id: other.metrics[0].id }),
      400,
      'request_validation_failed',
      'body.metric_id',
    );
    fails(
      await srv.post(comps, { metric_id: 'met_00000000000000000000' }),
      400,
      'request_validation_failed',
      'body.metric_id',
    );
    fails(await srv.post(comps, { metric_id: 'nope' }), 400, 'request_validation_failed', 'body.metric_id');
    fails(await srv.post(comps, {}), 400, 'request_validation_failed', 'body.metric_id');
    fails(
      await srv.post(comps, { metric_id: m0.id, ui_card_size: '1/3' }),
      400,
      'request_validation_failed',
      'body.ui_card_size',
    );
    fails(
      await srv.post(comps, { metric_id: m0.id, page_id: 'pg_00000000000000000000' }),
      400,
      'request_validation_failed',
      'body.page_id',
    );
    fails(
      await srv.post(`${comps}/${a.id}`, { metric_id: other.metrics[0].id }),
      400,
      'request_validation_failed',
      'body.metric_id',
    );
    fails(await srv.post(`${comps}/comp_00000000000000000000`, { ui_card_size: '1/2' }), 404, 'not_found');
    fails(await srv.delete(`${comps}/comp_00000000000000000000`), 404, 'not_found');
    fails(await srv.post(`${s.pages}/pg_00000000000000000000/components`, { metric_id: m0.id }), 404, 'not_found');

    // Reorder: b before a.
    const moved = ok(await srv.post(`${comps}/${b.id}`, { ui_sort_index: -1 }));
    assert.equal(moved.ui_sort_index, -1);
    assert.equal(moved.ui_card_size, '1/2', 'omitted fields keep their value');
    assert.deepEqual(
      ok(await srv.get(`${s.pages}/${page.id}`)).components.map((c: any) => c.id),
      [b.id, a.id],
    );
    const swapped = ok(await srv.post(`${comps}/${a.id}`, { metric_id: m1.id, ui_card_size: '1/2' }));
    assert.equal(swapped.metric.id, m1.id);

    // Up to the limit, then a 400 naming the field.
    for (let i = 2; i < MAX_COMPONENTS_PER_PAGE; i++) ok(await srv.post(comps, { metric_id: m0.id }), 201);
    const full = await srv.post(comps, { metric_id: m0.id });
    fails(full, 400, 'page_limit_reached', 'body.metric_id');
    assert.match(
      full.body.error!.message,
      new RegExp(`maximum number|most a page holds \\(${MAX_COMPONENTS_PER_PAGE}\\)`),
    );

    // Deleting a component leaves its metric; deleting the page deletes its components.
    ok(await srv.delete(`${comps}/${a.id}`));
    ok(await srv.get(`${s.metricsPath}/${m1.id}`));
    assert.equal(ok(await srv.get(`${s.pages}/${page.id}`)).component_count, MAX_COMPONENTS_PER_PAGE - 1);
    ok(await srv.delete(`${s.pages}/${page.id}`));
    fails(await srv.get(`${s.pages}/${page.id}`), 404, 'not_found');
    fails(await srv.post(`${comps}/${b.id}`, { ui_sort_index: 3 }), 404, 'not_found');
    assert.equal(srv.sluice.services.pages.components.list(page.id).length, 0, 'no component outlives its page');
    ok(await srv.get(`${s.metricsPath}/${m0.id}`));
    // The slug is free again.
    assert.equal(ok(await srv.post(s.pages, { name: 'Cards' }), 201).slug, 'cards');
  });

  test('domains: no domain id names one on this server (404); refresh reports each card', async () => {
    const page = ok(await srv.post(s.pages, { name: 'Domains' }), 201);
    const attach = await srv.post(`${s.pages}/${page.id}/domains/dom_00000000000000000000`);
    fails(attach, 404, 'not_found', 'params.domain_id');
    assert.match(attach.body.error!.message, /Domain dom_00000000000000000000 not found: custom domains are not part/);
    fails(
      await srv.delete(`${s.pages}/${page.id}/domains/dom_00000000000000000000`),
      404,
      'not_found',
      'params.domain_id',
    );
    // A page that does not exist is the page's 404, not the domain's.
    const noPage = await srv.post(`${s.pages}/pg_00000000000000000000/domains/dom_00000000000000000000`);
    fails(noPage, 404, 'not_found');
    assert.match(noPage.body.error!.message, /^Page pg_0/);
    assert.deepEqual(ok(await srv.get(`${s.pages}/${page.id}`)).domain_ids, []);
    ok(await srv.post(`${s.pages}/${page.id}/components`, { metric_id: s.metrics[0].id }), 201);
    const r = ok(await srv.post(`${s.pages}/${page.id}/refresh`));
    assert.equal(r.object, 'page_refresh');
    assert.equal(r.page_id, page.id);
    assert.ok(r.refreshed_at);
    assert.equal(r.components.length, 1);
    // Without the pipeline the rollups are not open: the card says so instead of failing the refresh.
    assert.equal(r.components[0].ok, false);
    assert.match(r.components[0].error, /rollups are not available/);
    assert.equal(ok(await srv.get(`${s.pages}/${page.id}`)).refreshed_at, r.refreshed_at);
  });

  test("scopes, and another team's pages answer 404", async () => {
    const page = ok(await srv.post(s.pages, { name: 'Scoped' }), 201);
    const reader = await scopedToken(srv, { pages: ['read'], projects: ['read'] });
    ok(await srv.get(`${s.pages}/${page.id}`, { token: reader }));
    fails(await srv.post(s.pages, { name: 'no' }, { token: reader }), 403, 'forbidden');
    fails(
      await srv.delete(`${s.pages}/${page.id}`, { token: await scopedToken(srv, { pages: ['read', 'write'] }) }),
      403,
      'forbidden',
    );
    const stranger = await otherTeamToken(srv);
    for (const [method, path, body] of [
      ['GET', `${s.pages}/${page.id}`],
      ['POST', `${s.pages}/${page.id}`, { name: 'x' }],
      ['DELETE', `${s.pages}/${page.id}`],
      ['GET', s.pages],
      ['POST', `${s.pages}/${page.id}/refresh`],
      ['POST', `${s.pages}/${page.id}/components`, { metric_id: s.metrics[0].id }],
    ] as [string, string, unknown?][]) {
      fails(await srv.call(method, path, { token: stranger, ...(body ? { body } : {}) }), 404, 'not_found');
    }
    ok(await srv.get(`${s.pages}/${page.id}`));
  });
});
