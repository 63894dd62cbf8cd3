/**
 * A throwaway certificate authority for tests that speak HTTPS: one CA and one server certificate
 * (for `localhost`, 127.0.0.1, ::1 and the names in TEST_CERT_NAMES), made with `openssl` in a temp
 * dir once per process, and local HTTP/HTTPS servers with a handler. Trust the CA through the
 * outbound client's `ca` option, or NODE_EXTRA_CA_CERTS=<caPath> in a child process.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Host names (besides localhost) the test server certificate is valid for; map them with an injected lookup. */
export const TEST_CERT_NAMES = ['public.test', 'sluice.test', 'other.test'];

export interface TestCa {
  /** PEM of the CA certificate (pass as `ca`). */
  ca: string;
  /** Path of the CA certificate file (for NODE_EXTRA_CA_CERTS). */
  caPath: string;
  /** PEM of the server certificate and its key. */
  cert: string;
  key: string;
}

let made: TestCa | undefined;

/** The process's test CA and server certificate (made on first use; the temp dir is removed at exit). */
export function testCa(): TestCa {
  if (made) return made;
  const dir = mkdtempSync(join(tmpdir(), 'sluice-test-ca-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const f = (name: string) => join(dir, name);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=Sluice Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  ssl('req', ...ec, '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=localhost');
  const names = ['localhost', ...TEST_CERT_NAMES].map((n) => `DNS:${n}`).join(',');
  writeFileSync(
    f('ext.cnf'),
    `subjectAltName=${names},IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n`,
  );
  ssl(
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('server.crt'),
    '-days',
    '2',
    '-extfile',
    f('ext.cnf'),
  );
  made = {
    ca: readFileSync(f('ca.crt'), 'utf8'),
    caPath: f('ca.crt'),
    cert: readFileSync(f('server.crt'), 'utf8'),
    key: readFileSync(f('server.key'), 'utf8'),
  };
  return made;
}

export type TestHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface LocalServer {
  port: number;
  /** `https://localhost:<port><path>` (or http), or with another host name (mapped by the test's lookup). */
  url(path?: string, host?: string): string;
  /** Connections accepted so far (TCP, before any TLS). */
  connections(): number;
  close(): Promise<void>;
}

/** Start a local HTTPS server (test CA certificate) on 127.0.0.1 with `handler`. */
export function startHttpsServer(handler: TestHandler): Promise<LocalServer> {
  const { cert, key } = testCa();
  return listen(https.createServer({ cert, key }, handler), 'https');
}

/** Start a local plain HTTP server on 127.0.0.1 with `handler`. */
export function startHttpServer(handler: TestHandler): Promise<LocalServer> {
  return listen(http.createServer(handler), 'http');
}

async function listen(server: http.Server | https.Server, scheme: 'http' | 'https'): Promise<LocalServer> {
  let connections = 0;
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    connections++;
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path = '/', host = 'localhost') => `${scheme}://${host}:${port}${path}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
