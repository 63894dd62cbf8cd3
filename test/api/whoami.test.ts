import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestServer } from '../helpers/server.js';
import { scopedToken } from '../catalog/helpers.js';

test('GET /v1/whoami: the calling key or session, whatever its scopes; 401 without credentials', async (t) => {
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const token = await scopedToken(srv, { metrics: ['read'] });
  const me = await srv.get('/v1/whoami', { token });
  assert.equal(me.status, 200);
  assert.equal(me.body.data.object, 'whoami');
  assert.equal(me.body.data.kind, 'key');
  assert.match(me.body.data.key_id, /^key_/);
  assert.deepEqual(me.body.data.scopes, { metrics: ['read'] });
  assert.equal(me.body.data.user_id, null);

  const session = await srv.post(
    '/v1/sessions',
    { email: 'admin@localhost', password: 'admin-password' },
    { token: null },
  );
  const viaSession = await srv.get('/v1/whoami', { token: session.body.data.token });
  assert.equal(viaSession.body.data.kind, 'session');
  assert.equal(viaSession.body.data.email, 'admin@localhost');
  assert.equal(viaSession.body.data.key_id, null);

  const none = await srv.get('/v1/whoami', { token: null });
  assert.equal(none.status, 401);
  assert.equal(none.body.error?.code, 'auth_missing_credentials');
});
