import { createOutboundClient, type OutboundLookup } from '../../src/outbound/client.js';
import type { OutboundClient } from '../../src/outbound/types.js';
import { testCa } from '../helpers/test-ca.js';
import type { TestServer } from '../helpers/server.js';
import { createProject, createSource, ok } from '../catalog/helpers.js';

/** Host names the tests use: two that reach the local servers, and private ones the guard refuses. */
const NAMES: Record<string, string> = {
  'public.test': '127.0.0.1',
  'sluice.test': '127.0.0.1',
  'other.test': '127.0.0.1',
  'private.test': '10.0.0.7',
  'loop2.test': '127.0.0.2',
  localhost: '::1',
};

export const mappedLookup: OutboundLookup = async (host) => {
  const a = NAMES[host];
  if (a === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return [{ address: a, family: a.includes(':') ? 6 : 4 }];
};

/**
 * The node's outbound client with the guard ON: only 127.0.0.1 (the local test servers, reached as
 * public.test) counts as public; every other private, loopback or reserved address stays refused.
 */
export function guardedOutbound(): OutboundClient {
  return createOutboundClient({
    allowPrivateTargets: false,
    lookup: mappedLookup,
    ca: testCa().ca,
    testOnlyPublicAddresses: ['127.0.0.1'],
  });
}

/** A project and a source, with the pulls and checks paths. */
export async function fetchSetup(srv: TestServer) {
  const project = await createProject(srv);
  const source = await createSource(srv, project.id, 'Scraped');
  return { project, source, pulls: `/v1/projects/${project.id}/pulls`, checks: `/v1/projects/${project.id}/checks` };
}

export async function createPull(srv: TestServer, path: string, body: Record<string, unknown>) {
  return ok(await srv.post(path, body), 201);
}
