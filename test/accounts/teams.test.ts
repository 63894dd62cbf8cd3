import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/clock.js';
import { JPEG_DATA_URI, PNG_DATA_URI, assertError, createKey, inviteAndSignIn, signIn } from './helpers.js';

const TEAM_FIELDS = [
  'object',
  'id',
  'name',
  'created_at',
  'updated_at',
  'deleted_at',
  'logo_url',
  'status',
  'billing_email',
  'billing_plan',
  'billing_address',
  'storage_gb',
  'billing_period_server_months',
  'billing_period_input_tokens',
  'billing_period_output_tokens',
  'billing_period_cache_read_tokens',
  'billing_period_cache_write_tokens',
  'billing_updated_at',
  'max_servers_per_project',
  'is_mfa_required',
  'is_tailglow_ai_enabled',
  'has_payment_method',
  'promo_expires_at',
  'server_trial_used_at',
  'promo_server_hours',
  'promo_ai_tokens',
  'tgl_generations_count',
  'tgl_generations_reset_at',
];
const ADDRESS_FIELDS = [
  'thoroughfare',
  'premise',
  'sublocality',
  'locality',
  'administrative_area',
  'postal_code',
  'country',
];

test('create a team with a session: defaults, ignored fields, every Team field, creator is Owner', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const admin = await signIn(srv);
  const r = await srv.post(
    '/v1/teams',
    {
      billing_plan: 'enterprise_v1',
      status: 'blocked',
      is_mfa_required: true,
      max_servers_per_project: 5,
      billing_address: { country: 'DE' },
      logo_url: PNG_DATA_URI,
    },
    { token: admin },
  );
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const team = r.body.data;
  assert.deepEqual(Object.keys(team), TEAM_FIELDS);
  assert.deepEqual(Object.keys(team.billing_address), ADDRESS_FIELDS);
  assert.equal(team.object, 'team');
  assert.match(team.id, /^team_[0-9a-z]{20}$/);
  assert.equal(team.name, 'Team');
  assert.equal(team.billing_email, 'admin@localhost');
  assert.equal(team.billing_plan, 'pro_v1');
  assert.equal(team.status, 'active');
  assert.equal(team.is_mfa_required, false);
  assert.equal(team.max_servers_per_project, 10);
  assert.equal(team.billing_address.country, null);
  assert.match(team.logo_url, /^data:image\/svg\+xml;base64,/, 'a generated logo, not the one sent');
  assert.equal(team.deleted_at, null);
  assert.equal(team.storage_gb, 0);
  assert.equal(team.billing_updated_at, null);

  const members = await srv.get(`/v1/teams/${team.id}/users`, { token: admin, headers: { 'x-team-id': team.id } });
  assert.equal(members.status, 200);
  assert.equal(members.body.data.length, 1);
  assert.equal(members.body.data[0].role_name, 'Owner');

  const named = await srv.post('/v1/teams', { name: 'Acme', billing_email: 'billing@acme.example' }, { token: admin });
  assert.equal(named.status, 201);
  assert.equal(named.body.data.name, 'Acme');
  assert.equal(named.body.data.billing_email, 'billing@acme.example');
  assert.equal((await srv.get(`/v1/teams/${named.body.data.id}`, { token: admin })).body.data.name, 'Acme');
});

test('team create, update and delete need a session: API key → 403 session_required', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const teamId = srv.sluice.bootstrap!.team_id;
  assertError(await srv.post('/v1/teams', { name: 'By key' }), 403, 'session_required');
  assertError(await srv.post(`/v1/teams/${teamId}`, { name: 'By key' }), 403, 'session_required');
  assertError(await srv.delete(`/v1/teams/${teamId}`), 403, 'session_required');
});

test('team create validation edges', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const admin = await signIn(srv);
  const post = (body: unknown) => srv.post('/v1/teams', body, { token: admin });
  assertError(await post({ name: 'a' }), 400, 'request_validation_failed', 'body.name');
  assert.equal((await post({ name: 'ab' })).status, 201);
  assert.equal((await post({ name: 'x'.repeat(60) })).status, 201);
  assertError(await post({ name: 'x'.repeat(61) }), 400, 'request_validation_failed', 'body.name');
  assertError(await post({ billing_email: 'not-an-email' }), 400, 'request_validation_failed', 'body.billing_email');
  assertError(
    await post({ billing_email: 'a'.repeat(57) + '@acme.io' }),
    400,
    'request_validation_failed',
    'body.billing_email',
  );
  assert.equal(
    (await post({ billing_email: 'a'.repeat(56) + '@acme.io' })).status,
    201,
    '64 characters is the maximum',
  );
  const operator = assertError(
    await post({ billing_email: 'me@sluice.dev' }),
    400,
    'request_validation_failed',
    'body.billing_email',
  );
  assert.match(operator.message, /sluice\.dev/);
  assertError(
    await post({ billing_email: 'me@billing.SLUICE.dev' }),
    400,
    'request_validation_failed',
    'body.billing_email',
  );
  assertError(await post({ favourite: 'colour' }), 400, 'request_validation_failed', 'body.favourite');
  assertError(
    await post({ is_tailglow_ai_enabled: true }),
    400,
    'request_validation_failed',
    'body.is_tailglow_ai_enabled',
  );
  assertError(await post({ status: 'sleeping' }), 400, 'request_validation_failed', 'body.status');
  assertError(
    await post({ max_servers_per_project: 0 }),
    400,
    'request_validation_failed',
    'body.max_servers_per_project',
  );
  assertError(
    await post({ billing_address: { country: 'Germany' } }),
    400,
    'request_validation_failed',
    'body.billing_address.country',
  );
  assertError(
    await post({ logo_url: 'data:image/gif;base64,R0lGODlhAQABAAAAACw=' }),
    400,
    'request_validation_failed',
    'body.logo_url',
  );
  assertError(
    await post({ logo_url: JPEG_DATA_URI.replace('jpeg', 'png') }),
    400,
    'request_validation_failed',
    'body.logo_url',
  );
  assertError(
    await post({ logo_url: 'https://example.com/logo.png' }),
    400,
    'request_validation_failed',
    'body.logo_url',
  );
  assertError(await srv.get('/v1/teams/prj_aaaaaaaaaaaaaaaaaaaa', { token: admin }), 404, 'not_found');
  assertError(await srv.get('/v1/teams/team_aaaaaaaaaaaaaaaaaaaa', { token: admin }), 404, 'not_found');
});

test('a user may create at most 20 teams', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const admin = await signIn(srv);
  // The bootstrap team counts: it was created for the admin.
  for (let i = 2; i <= 20; i++)
    assert.equal((await srv.post('/v1/teams', { name: `Team ${i}` }, { token: admin })).status, 201);
  const err = assertError(
    await srv.post('/v1/teams', { name: 'One too many' }, { token: admin }),
    403,
    'team_limit_reached',
  );
  assert.match(err.message, /20/);
});

test('list teams: visibility, filters and order', async (t) => {
  const clock = new ManualClock(Date.parse('2026-05-10T10:00:00Z'));
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  const admin = await signIn(srv);
  clock.advance(60_000);
  const alpha = (await srv.post('/v1/teams', { name: 'Alpha squad' }, { token: admin })).body.data;
  clock.advance(60_000);
  const zulu = (await srv.post('/v1/teams', { name: 'Zulu' }, { token: admin })).body.data;

  const byKey = await srv.get('/v1/teams');
  assert.deepEqual(
    byKey.body.data.map((x: any) => x.id),
    [srv.sluice.bootstrap!.team_id],
    'an API key sees only its own team',
  );

  const all = await srv.get('/v1/teams', { token: admin });
  assert.deepEqual(
    all.body.data.map((x: any) => x.name),
    ['Zulu', 'Team', 'Alpha squad'],
    'name desc by default',
  );
  assert.deepEqual(
    (await srv.get('/v1/teams?sort=asc', { token: admin })).body.data.map((x: any) => x.name),
    ['Alpha squad', 'Team', 'Zulu'],
  );
  assert.deepEqual(
    (await srv.get('/v1/teams?order_by=created_at', { token: admin })).body.data.map((x: any) => x.name),
    ['Zulu', 'Alpha squad', 'Team'],
  );
  assert.deepEqual(
    (await srv.get('/v1/teams?name=contains:squad', { token: admin })).body.data.map((x: any) => x.id),
    [alpha.id],
  );
  assert.deepEqual(
    (await srv.get('/v1/teams?name=zulu', { token: admin })).body.data.map((x: any) => x.id),
    [zulu.id],
  );
  assert.equal((await srv.get('/v1/teams?status=in:active,blocked', { token: admin })).body.data.length, 3);
  assert.equal((await srv.get('/v1/teams?status=equals:blocked', { token: admin })).body.data.length, 0);
  assert.equal((await srv.get('/v1/teams?billing_plan=pro_v1', { token: admin })).body.data.length, 3);
  assert.deepEqual(
    (await srv.get(`/v1/teams?created_at=gt:${alpha.created_at}`, { token: admin })).body.data.map((x: any) => x.id),
    [zulu.id],
  );
  assertError(
    await srv.get('/v1/teams?status=sleeping', { token: admin }),
    400,
    'request_validation_failed',
    'query.status',
  );
  assertError(
    await srv.get('/v1/teams?billing_plan=contains:pro', { token: admin }),
    400,
    'request_validation_failed',
    'query.billing_plan',
  );
  assertError(
    await srv.get('/v1/teams?created_at=gt:yesterday', { token: admin }),
    400,
    'request_validation_failed',
    'query.created_at',
  );
  assertError(
    await srv.get('/v1/teams?colour=red', { token: admin }),
    400,
    'request_validation_failed',
    'query.colour',
  );

  // Scheduled deletion: hidden by default, listed with deleted_at=not:null for Owners.
  assert.equal((await srv.delete(`/v1/teams/${zulu.id}`, { token: admin })).status, 200);
  assert.deepEqual(
    (await srv.get('/v1/teams', { token: admin })).body.data.map((x: any) => x.name),
    ['Team', 'Alpha squad'],
  );
  assert.deepEqual(
    (await srv.get('/v1/teams?deleted_at=not:null', { token: admin })).body.data.map((x: any) => x.id),
    [zulu.id],
  );
});

test('team update: members change name and logo only; Owners the rest; service-managed fields refused', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const admin = await signIn(srv);
  const team = (await srv.post('/v1/teams', { name: 'Shared' }, { token: admin })).body.data;
  const asAdmin = { token: admin, headers: { 'x-team-id': team.id } };
  const member = await inviteAndSignIn(srv, team.id, 'member@example.com', { token: admin });
  const asMember = { token: member.token, headers: { 'x-team-id': team.id } };
  const update = (body: unknown, as: typeof asAdmin) => srv.post(`/v1/teams/${team.id}`, body, as);

  // Members: name and logo.
  const renamed = await update({ name: 'Renamed by member' }, asMember);
  assert.equal(renamed.status, 200);
  assert.equal(renamed.body.data.name, 'Renamed by member');
  const logo = await update({ logo_url: PNG_DATA_URI }, asMember);
  assert.equal(logo.body.data.logo_url, PNG_DATA_URI);
  assert.equal((await update({ logo_url: JPEG_DATA_URI }, asMember)).body.data.logo_url, JPEG_DATA_URI);
  const ownerOnly = assertError(
    await update({ name: 'x y', billing_email: 'm@example.com' }, asMember),
    403,
    'owner_required',
  );
  assert.match(ownerOnly.message, /billing_email/);
  assertError(await update({ is_tailglow_ai_enabled: true }, asMember), 403, 'owner_required');
  assertError(await update({ status: 'active', expected_status: 'active' }, asMember), 403, 'owner_required');
  assertError(await update({ max_servers_per_project: 10 }, asMember), 403, 'owner_required');
  assertError(await srv.delete(`/v1/teams/${team.id}`, asMember), 403, 'owner_required');

  // Shape checks for everyone.
  assertError(await update({}, asAdmin), 400, 'request_validation_failed', 'body');
  assertError(await update({ name: 'a' }, asAdmin), 400, 'request_validation_failed', 'body.name');
  assertError(await update({ name: 'x'.repeat(61) }, asAdmin), 400, 'request_validation_failed', 'body.name');
  assertError(await update({ status: 'active' }, asAdmin), 400, 'request_validation_failed', 'body.expected_status');
  assertError(await update({ expected_status: 'active' }, asAdmin), 400, 'request_validation_failed', 'body.status');
  assertError(
    await update({ created_at: '2020-01-01T00:00:00Z' }, asAdmin),
    400,
    'request_validation_failed',
    'body.created_at',
  );
  assertError(
    await update({ billing_email: 'owner@sluice.dev' }, asAdmin),
    400,
    'request_validation_failed',
    'body.billing_email',
  );
  assertError(
    await update({ logo_url: 'data:image/png;base64,AAAA' }, asAdmin),
    400,
    'request_validation_failed',
    'body.logo_url',
  );

  // Owners: billing, account settings.
  const owner = await update(
    {
      billing_email: 'finance@example.com',
      billing_address: { locality: 'Berlin', country: 'DE' },
      is_tailglow_ai_enabled: true,
    },
    asAdmin,
  );
  assert.equal(owner.status, 200, JSON.stringify(owner.body));
  assert.equal(owner.body.data.billing_email, 'finance@example.com');
  assert.equal(owner.body.data.is_tailglow_ai_enabled, true);
  const merged = await update({ billing_address: { postal_code: '10115' } }, asAdmin);
  assert.deepEqual(merged.body.data.billing_address, {
    thoroughfare: null,
    premise: null,
    sublocality: null,
    locality: 'Berlin',
    administrative_area: null,
    postal_code: '10115',
    country: 'DE',
  });
  const cleared = await update({ logo_url: null }, asAdmin);
  assert.match(cleared.body.data.logo_url, /^data:image\/svg\+xml;base64,/);

  // Managed by the service, MFA and payment rules.
  assertError(await update({ status: 'blocked', expected_status: 'delinquent' }, asAdmin), 409, 'conflict');
  assertError(await update({ status: 'blocked', expected_status: 'active' }, asAdmin), 403, 'managed_by_service');
  assert.equal(
    (await update({ status: 'active', expected_status: 'active' }, asAdmin)).status,
    200,
    'the current status is a no-op',
  );
  assertError(await update({ max_servers_per_project: 50 }, asAdmin), 403, 'managed_by_service');
  assertError(await update({ deleted_at: '2030-01-01T00:00:00Z' }, asAdmin), 403, 'managed_by_service');
  assertError(await update({ is_mfa_required: true }, asAdmin), 403, 'mfa_recent_required');
  assert.equal((await update({ is_mfa_required: false }, asAdmin)).status, 200);
  assertError(await update({ billing_plan: 'enterprise_v1' }, asAdmin), 402, 'payment_method_required');
});

test('deleting a team schedules it; only Owners see it; deleted_at null restores it', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const admin = await signIn(srv);
  const team = (await srv.post('/v1/teams', { name: 'Doomed' }, { token: admin })).body.data;
  const member = await inviteAndSignIn(srv, team.id, 'm2@example.com', { token: admin });
  const del = await srv.delete(`/v1/teams/${team.id}`, { token: admin });
  assert.equal(del.status, 200);
  assert.equal(del.body.data, null);
  const seen = await srv.get(`/v1/teams/${team.id}`, { token: admin });
  assert.equal(seen.status, 200);
  assert.ok(seen.body.data.deleted_at);
  assertError(await srv.get(`/v1/teams/${team.id}`, { token: member.token }), 404, 'not_found');
  assert.equal((await srv.delete(`/v1/teams/${team.id}`, { token: admin })).status, 200, 'deleting again is harmless');
  const restored = await srv.post(`/v1/teams/${team.id}`, { deleted_at: null }, { token: admin });
  assert.equal(restored.status, 200);
  assert.equal(restored.body.data.deleted_at, null);
  assert.equal((await srv.get(`/v1/teams/${team.id}`, { token: member.token })).status, 200);
});

test('team billing summary: every field, zero line items, current UTC month', async (t) => {
  const clock = new ManualClock(Date.parse('2026-02-14T08:30:00Z'));
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  const teamId = srv.sluice.bootstrap!.team_id;
  const r = await srv.get(`/v1/teams/${teamId}/billing`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const b = r.body.data;
  for (const f of [
    'is_estimate_complete',
    'team_id',
    'calculated_at',
    'billing_plan',
    'has_payment_method',
    'promo_expires_at',
    'server_count',
    'uninvoiced_server_hours',
    'promo_server_hours',
    'promo_ai_tokens',
    'available_promo_server_hours',
    'available_promo_ai_tokens',
    'included_storage_gb_months',
    'available_included_storage_gb_months',
    'period_start_at',
    'period_end_at',
    'billed_at',
    'line_items',
    'subtotal_cents',
    'discount_cents',
    'total_cents',
    'projected_line_items',
    'projected_subtotal_cents',
    'projected_discount_cents',
    'projected_total_cents',
  ]) {
    assert.ok(f in b, `billing has ${f}`);
  }
  assert.equal(b.object, 'billing');
  assert.equal(b.team_id, teamId);
  assert.equal(b.period_start_at, '2026-02-01T00:00:00.000Z');
  assert.equal(b.period_end_at, '2026-03-01T00:00:00.000Z');
  assert.deepEqual(
    b.line_items.map((l: any) => l.line_item_type),
    ['compute', 'storage', 'subscription', 'ai_input', 'ai_output', 'ai_cache_read', 'ai_cache_write'],
  );
  for (const l of b.line_items) {
    assert.equal(l.quantity, 0);
    assert.equal(l.total_cents, 0);
    assert.equal(l.discount_id, null);
    assert.equal(typeof l.description, 'string');
  }
  assert.equal(b.total_cents, 0);

  const noBilling = await createKey(srv, { projects: ['read'] });
  assertError(await srv.get(`/v1/teams/${teamId}/billing`, { token: noBilling.secret }), 403, 'forbidden');
  const admin = await signIn(srv);
  const other = (await srv.post('/v1/teams', { name: 'Other' }, { token: admin })).body.data;
  assertError(await srv.get(`/v1/teams/${other.id}/billing`), 404, 'not_found');
  // A session may read billing of any of its teams.
  assert.equal((await srv.get(`/v1/teams/${other.id}/billing`, { token: admin })).body.data.team_id, other.id);
});

test('team logo size: over 5 MB is refused; bodies above 8 MiB are 413', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const admin = await signIn(srv);
  const teamId = srv.sluice.bootstrap!.team_id;
  const png = (bytes: number) => {
    const buf = Buffer.alloc(bytes);
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(buf);
    return 'data:image/png;base64,' + buf.toString('base64');
  };
  const max = await srv.post(`/v1/teams/${teamId}`, { logo_url: png(5 * 1024 * 1024) }, { token: admin });
  assert.equal(max.status, 200, JSON.stringify(max.body).slice(0, 300));
  assertError(
    await srv.post(`/v1/teams/${teamId}`, { logo_url: png(5 * 1024 * 1024 + 1) }, { token: admin }),
    400,
    'request_validation_failed',
    'body.logo_url',
  );
  const huge = await srv.post(`/v1/teams/${teamId}`, { name: 'x'.repeat(9 * 1024 * 1024) }, { token: admin });
  assertError(huge, 413, 'payload_too_large');
});
