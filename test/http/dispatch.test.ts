import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dispatch, type DispatchDeps } from '../../src/api/http/dispatch.js';
import { Router } from '../../src/api/http/router.js';
import { defineRoute, type Principal, type RouteDef } from '../../src/api/http/route.js';
import { ApiError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { TestServer } from '../helpers/server.js';

/** A logger whose lines are kept, parsed. */
function capturedLog(): { log: ReturnType<typeof createLogger>; lines: any[] } {
  const lines: any[] = [];
  const log = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines };
}

const PRINCIPAL: Principal = {
  kind: 'key',
  teamId: 'team_test',
  userId: null,
  keyId: null,
  sessionId: null,
  scopes: {},
  isOwner: false,
};

/** Routes that fail in each way, dispatched without a server (auth: 'none' skips the credentials). */
function failingRoutes(): RouteDef[] {
  const route = (path: string, handler: () => unknown) =>
    defineRoute({
      method: 'GET',
      path,
      scope: 'authenticated',
      auth: 'none',
      summary: path,
      handler: handler as RouteDef['handler'],
    });
  return [
    route('/v1/bug', function viewHandler() {
      throw new Error('views table missing', { cause: new Error('ENOENT: no such file views.lmdb') });
    }),
    route('/v1/async-bug', async function asyncViewHandler() {
      await Promise.resolve();
      throw new TypeError("Cannot read properties of undefined (reading 'columns')");
    }),
    route('/v1/unavailable', () => {
      throw new ApiError('spool_full_storage_write', undefined, { cause: new Error('MDB_MAP_FULL') });
    }),
    route('/v1/thrown-string', () => {
      throw 'not an error';
    }),
    route('/v1/absent', () => {
      throw new ApiError('not_found', 'Thing thg_1 not found');
    }),
    route('/v1/fine', () => ({ data: { ok: true } })),
  ];
}

async function run(path: string) {
  const { log, lines } = capturedLog();
  const router = new Router(failingRoutes());
  const deps: DispatchDeps = { authenticate: () => PRINCIPAL, team: () => undefined, log };
  const result = await dispatch(deps, router.match('GET', path), {
    method: 'GET',
    path,
    query: '',
    headers: {},
    body: null,
  });
  return { result, errors: lines.filter((l) => l.level >= 50), lines };
}

test('a handler that throws a plain Error answers 500 server_error and is logged at error level with its stack and cause', async () => {
  const { result, errors } = await run('/v1/bug');
  assert.equal(result.status, 500);
  assert.equal(result.envelope.error?.code, 'server_error');
  assert.equal(
    result.envelope.error?.message,
    'Something went wrong on the server',
    'the answer does not carry the internals',
  );
  assert.equal(errors.length, 1);
  const [line] = errors;
  assert.equal(line.level, 50);
  assert.equal(line.method, 'GET');
  assert.equal(line.route, 'GET /v1/bug');
  assert.equal(line.status, 500);
  assert.equal(line.code, 'server_error');
  assert.equal(line.err.type, 'Error');
  assert.match(line.err.message, /views table missing/);
  assert.match(line.err.message, /ENOENT: no such file views\.lmdb/, 'the cause is in the message');
  assert.match(
    line.err.stack,
    /^Error: views table missing\n\s+at \S*viewHandler\b/,
    'the stack of the throw, not of the envelope',
  );
  assert.match(line.err.stack, /caused by: Error: ENOENT/);
  assert.equal(line.msg, 'GET /v1/bug answered 500 server_error');
});

test('an async handler that rejects is logged the same way', async () => {
  const { result, errors } = await run('/v1/async-bug');
  assert.equal(result.status, 500);
  assert.equal(errors.length, 1);
  assert.equal(errors[0].err.type, 'TypeError');
  assert.match(errors[0].err.stack, /at \S*asyncViewHandler\b/);
});

test('a 5xx ApiError is logged with its own cause; a thrown non-Error is logged as it is', async () => {
  const unavailable = await run('/v1/unavailable');
  assert.equal(unavailable.result.status, 503);
  assert.equal(unavailable.result.envelope.error?.code, 'spool_full_storage_write');
  assert.equal(unavailable.errors.length, 1);
  assert.equal(unavailable.errors[0].code, 'spool_full_storage_write');
  assert.equal(unavailable.errors[0].err.type, 'ApiError');
  assert.match(unavailable.errors[0].err.stack, /caused by: Error: MDB_MAP_FULL/);

  const thrown = await run('/v1/thrown-string');
  assert.equal(thrown.result.status, 500);
  assert.equal(thrown.errors.length, 1);
  assert.equal(thrown.errors[0].err, 'not an error');
});

test('4xx answers and successes log nothing at error level', async () => {
  const absent = await run('/v1/absent');
  assert.equal(absent.result.status, 404);
  assert.equal(absent.errors.length, 0);
  const fine = await run('/v1/fine');
  assert.equal(fine.result.status, 200);
  assert.equal(fine.lines.length, 0);
});

test('the server logs a 5xx of a real route once, with the cause, beside its request line', async (t) => {
  const { log, lines } = capturedLog();
  const srv = await TestServer.start({ env: { SLUICE_PIPELINE: '0' }, log });
  t.after(() => srv.stop());
  // A dependency failing under a route: the store read behind the project list.
  srv.sluice.services.projects.list = () => {
    throw new Error('project index unreadable', { cause: new Error('MDB_CORRUPTED') });
  };
  const res = await srv.get('/v1/projects');
  assert.equal(res.status, 500);
  assert.equal(res.body.error?.code, 'server_error');
  const errors = lines.filter((l) => l.level >= 50);
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert.equal(errors[0].route, 'GET /v1/projects');
  assert.match(errors[0].err.stack, /project index unreadable[\s\S]*caused by: Error: MDB_CORRUPTED/);
  const requests = lines.filter((l) => l.msg === 'request' && l.route === 'GET /v1/projects');
  assert.deepEqual(
    requests.map((l) => l.status),
    [500],
  );
});
