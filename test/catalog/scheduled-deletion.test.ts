import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { purgeExpired } from '../../src/catalog/purge-scheduler.js';
import { TestServer } from '../helpers/server.js';
import { createProject, createSource, fails, ok } from './helpers.js';

const DAY = 24 * 3600 * 1000;

test('scheduled deletion: hidden at once, restorable within 7 days, purged after, with everything beneath', async (t) => {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  const s = srv.sluice.services;
  const project = await createProject(srv);
  const p = `/v1/projects/${project.id}`;
  const kept = await createSource(srv, project.id, 'kept');
  const doomed = await createSource(srv, project.id, 'doomed');
  const key = ok(await srv.post(`${p}/sources/${doomed.id}/ingest_keys`), 201);
  const col = ok(await srv.post(`${p}/collections`, { name: 'Events', source_id: doomed.id }), 201);
  const keptCol = ok(await srv.post(`${p}/collections`, { name: 'Kept', source_id: kept.id }), 201);
  const lonelyCol = ok(await srv.post(`${p}/collections`, { name: 'Lonely', source_id: kept.id }), 201);
  let destroyed: string[] = [];
  s.collectionDestroyers.push(async (c) => void destroyed.push(c.id));

  // Restore within the window.
  const scheduled = ok(await srv.delete(`${p}/sources/${doomed.id}`));
  assert.equal(scheduled.deleted_at, '2026-03-01T00:00:00.000Z');
  clock.advance(7 * DAY - 1);
  assert.deepEqual(
    await purgeExpired(s),
    { teams: [], projects: [], sources: [], collections: [], views: [], metrics: [] },
    'nothing purged before 7 days',
  );
  assert.equal(ok(await srv.post(`${p}/sources/${doomed.id}`, { deleted_at: null })).deleted_at, null);
  clock.advance(30 * DAY);
  assert.deepEqual((await purgeExpired(s)).sources, [], 'a restored source is not purged');

  // Schedule again and let 7 days pass: source, its collection and key go; siblings stay.
  ok(await srv.delete(`${p}/sources/${doomed.id}`));
  ok(await srv.delete(`${p}/collections/${lonelyCol.id}`));
  clock.advance(7 * DAY);
  const result = await purgeExpired(s);
  assert.deepEqual(result, {
    teams: [],
    projects: [],
    sources: [doomed.id],
    collections: [lonelyCol.id],
    views: [],
    metrics: [],
  });
  assert.deepEqual(
    destroyed.sort(),
    [col.id, lonelyCol.id].sort(),
    'collection destroyers ran for every destroyed collection',
  );
  fails(await srv.get(`${p}/sources/${doomed.id}`), 404, 'not_found');
  fails(await srv.get(`${p}/collections/${col.id}`), 404, 'not_found');
  fails(await srv.get(`${p}/collections/${lonelyCol.id}`), 404, 'not_found');
  assert.deepEqual(ok(await srv.get(`${p}/sources?deleted_at=not:null`)), [], 'removed, not just hidden');
  assert.equal(s.ingestKeys.findBySecret(key.key), undefined);
  assert.equal(s.ingestKeys.byId(key.id), undefined);
  assert.equal(ok(await srv.get(`${p}/sources/${kept.id}`)).collections_count, 1);
  assert.equal(ok(await srv.get(`${p}/collections/${keptCol.id}`)).id, keptCol.id);
  // The purged source's name and the purged collection's slug are free again.
  await createSource(srv, project.id, 'doomed');
  assert.equal(ok(await srv.post(`${p}/collections`, { name: 'Lonely', source_id: kept.id }), 201).slug, 'lonely');

  // A scheduled project takes everything with it.
  destroyed = [];
  const keptKey = ok(await srv.post(`${p}/sources/${kept.id}/ingest_keys`), 201);
  ok(await srv.delete(p));
  clock.advance(6 * DAY);
  assert.deepEqual((await purgeExpired(s)).projects, []);
  clock.advance(DAY);
  assert.deepEqual((await purgeExpired(s)).projects, [project.id]);
  fails(await srv.get(p), 404, 'not_found');
  assert.equal(s.sources.byId(kept.id), undefined);
  assert.equal(s.collections.byId(keptCol.id), undefined);
  assert.equal(s.ingestKeys.findBySecret(keptKey.key), undefined);
  assert.equal(destroyed.length, 2);
  assert.deepEqual([...s.sources.table.all()], []);
  assert.deepEqual([...s.collections.table.all()], []);
  assert.deepEqual([...s.ingestKeys.table.all()], []);
});

test('scheduled deletion: a scheduled state and the 7-day clock survive a restart', async (t) => {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
  const srv = await TestServer.start({ clock });
  t.after(() => srv.stop());
  const project = await createProject(srv);
  const p = `/v1/projects/${project.id}`;
  const source = await createSource(srv, project.id, 'web');
  const col = ok(await srv.post(`${p}/collections`, { name: 'Events', source_id: source.id }), 201);
  ok(await srv.delete(`${p}/collections/${col.id}`));
  clock.advance(3 * DAY);

  await srv.restart();
  assert.equal(ok(await srv.get(`${p}/collections/${col.id}`)).deleted_at, '2026-03-01T00:00:00.000Z');
  clock.advance(4 * DAY);
  assert.deepEqual((await purgeExpired(srv.sluice.services)).collections, [col.id]);
  fails(await srv.get(`${p}/collections/${col.id}`), 404, 'not_found');
});

test('force delete: project, source and collection destroy everything beneath at once', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const s = srv.sluice.services;
  const project = await createProject(srv);
  const p = `/v1/projects/${project.id}`;
  const source = await createSource(srv, project.id, 'web');
  const key = ok(await srv.post(`${p}/sources/${source.id}/ingest_keys`), 201);
  const col = ok(await srv.post(`${p}/collections`, { name: 'Events', source_id: source.id }), 201);
  s.activity.touch(key.id);

  assert.equal(ok(await srv.delete(`${p}/force`)), null);
  fails(await srv.get(p), 404, 'not_found');
  assert.equal(s.sources.byId(source.id), undefined);
  assert.equal(s.collections.byId(col.id), undefined);
  assert.equal(s.collections.bySlug(source.id, col.slug), undefined);
  assert.equal(s.ingestKeys.findBySecret(key.key), undefined);
  assert.equal(s.activity.lastActivityAt(key.id), null, 'activity of destroyed keys is forgotten');
  fails(await srv.delete(`${p}/force`), 404, 'not_found');
});
