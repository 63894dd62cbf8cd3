import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from './helpers/server.js';

test('healthz, envelope on unknown routes and wrong methods', async (t) => {
  const srv = await TestServer.start();
  t.after(() => srv.stop());
  const health = await fetch(srv.url + '/healthz');
  assert.equal(health.status, 200);
  assert.equal(((await health.json()) as any).data.status, 'ok');

  const missing = await srv.get('/v1/nope');
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error?.code, 'route_not_found');
  assert.equal(missing.body.data, null);

  const wrong = await srv.call('PUT', '/v1/projects');
  assert.equal(wrong.status, 405);
  assert.equal(wrong.body.error?.code, 'method_not_allowed');
  assert.equal(wrong.headers.get('allow'), 'GET, POST');
});
