import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { blockedAddressReason } from '../../src/outbound/address-rule.js';
import { createOutboundClient, type ResolvedAddress } from '../../src/outbound/client.js';
import { OutboundError } from '../../src/outbound/types.js';
import { startHttpServer, type LocalServer } from '../helpers/test-ca.js';

/** Names the injected lookup maps to refused addresses. */
const NAMES: Record<string, string> = {
  'loopback.test': '127.0.0.1',
  'evil.test': '10.0.0.1',
  'metadata.test': '169.254.169.254',
  'cgnat.test': '100.64.1.1',
  'zero.test': '0.0.0.0',
  'mcast.test': '224.0.0.251',
  'v6loop.test': '::1',
  'mapped.test': '::ffff:10.0.0.1',
  'nat64.test': '64:ff9b::7f00:1',
  'ula.test': 'fd00::1',
};

/** Every kind of address the rule refuses, with one example each. */
const REFUSED: Array<[string, string]> = [
  ['127.0.0.1', 'loopback'],
  ['127.255.0.9', 'loopback /8'],
  ['10.0.0.1', 'private 10/8'],
  ['172.16.5.4', 'private 172.16/12'],
  ['192.168.1.1', 'private 192.168/16'],
  ['169.254.169.254', 'link-local (cloud metadata)'],
  ['100.64.0.1', 'CGNAT 100.64/10'],
  ['100.127.255.254', 'CGNAT upper end'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', '0/8'],
  ['224.0.0.1', 'multicast 224/4'],
  ['239.255.255.250', 'multicast upper'],
  ['240.0.0.1', 'reserved 240/4'],
  ['255.255.255.255', 'broadcast'],
  ['192.0.2.10', 'documentation TEST-NET-1'],
  ['198.18.0.1', 'benchmarking'],
  ['::1', 'IPv6 loopback'],
  ['::', 'IPv6 unspecified'],
  ['fe80::1', 'IPv6 link-local'],
  ['fc00::1', 'ULA fc00::/7'],
  ['fd12:3456::1', 'ULA fd00::/8'],
  ['ff02::1', 'IPv6 multicast'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:8.8.8.8', 'IPv4-mapped public (still refused: the v4 host is not what was checked)'],
  ['64:ff9b::a00:1', 'NAT64 64:ff9b::/96'],
  ['::ffff:0:a00:1', 'IPv4-translated'],
  ['2002:a00:1::1', '6to4'],
  ['2001::1', 'Teredo'],
  ['2001:db8::1', 'IPv6 documentation'],
  ['::a00:1', 'IPv4-compatible (outside 2000::/3)'],
  ['not-an-ip', 'not an address'],
];

const ALLOWED = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.216.34',
  '100.63.255.255',
  '100.128.0.1',
  '2606:4700::1111',
  '2a00:1450:4001:80b::200e',
];

describe('address rule', () => {
  for (const [address, what] of REFUSED) {
    it(`refuses ${address} (${what})`, () => {
      assert.notEqual(blockedAddressReason(address), null);
    });
  }
  for (const address of ALLOWED) {
    it(`allows public ${address}`, () => {
      assert.equal(blockedAddressReason(address), null);
    });
  }
});

describe('outbound client refuses blocked targets before connecting', () => {
  let server: LocalServer;
  const lookups: string[] = [];
  before(async () => {
    server = await startHttpServer((_req, res) => res.end('reached'));
  });
  after(() => server.close());

  const client = () =>
    createOutboundClient({
      allowPrivateTargets: false,
      lookup: async (host): Promise<ResolvedAddress[]> => {
        lookups.push(host);
        const address = NAMES[host];
        if (!address) throw new Error(`unknown test name ${host}`);
        return [{ address, family: address.includes(':') ? 6 : 4 }];
      },
      defaults: { connectTimeoutMs: 500 },
    });

  for (const [address] of REFUSED.filter(([a]) => a !== 'not-an-ip')) {
    it(`literal ${address}`, async () => {
      const host = address.includes(':') ? `[${address}]` : address;
      const started = performance.now();
      const err = await client()
        .fetch({ url: `http://${host}:${server.port}/`, requireHttps: false })
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(err instanceof OutboundError, String(err));
      assert.equal(err.code, 'blocked_address', err.message);
      assert.equal(err.stage, 'request');
      assert.ok(performance.now() - started < 400, 'refused without trying to connect');
    });
  }

  for (const [name, address] of Object.entries(NAMES)) {
    it(`name ${name} resolving to ${address}`, async () => {
      const before = server.connections();
      const err = await client()
        .fetch({ url: `http://${name}:${server.port}/`, requireHttps: false })
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(err instanceof OutboundError);
      assert.equal(err.code, 'blocked_address');
      assert.match(err.message, new RegExp(`${name} resolves to`));
      assert.equal(server.connections(), before, 'no connection was made');
      const checked = await client().checkTarget(`https://${name}/`);
      assert.deepEqual(checked.ok, false);
      assert.equal(!checked.ok && checked.code, 'blocked_address');
    });
  }

  it('refuses loopback written in other notations (URL parsing normalises them first)', async () => {
    const looked = lookups.length;
    for (const host of [
      '2130706433',
      '0x7f000001',
      '0177.0.0.1',
      '127.1',
      '[::ffff:7f00:1]',
      '[0:0:0:0:0:ffff:127.0.0.1]',
      '[::]',
      '0',
    ]) {
      const err = await client()
        .fetch({ url: `http://${host}:${server.port}/`, requireHttps: false })
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(err instanceof OutboundError, host);
      assert.equal(err.code, 'blocked_address', `${host}: ${err.message}`);
    }
    assert.equal(lookups.length, looked, 'IP literals are never looked up');
  });

  it('a name with one public and one loopback address is refused whole', async () => {
    const c = createOutboundClient({
      allowPrivateTargets: false,
      lookup: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ],
    });
    const err = await c.fetch({ url: `http://mixed.test:${server.port}/`, requireHttps: false }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof OutboundError);
    assert.equal(err.code, 'blocked_address');
    assert.match(err.message, /127\.0\.0\.1/);
  });

  it('SLUICE_ALLOW_PRIVATE_TARGETS lifts the address rule only', async () => {
    const c = createOutboundClient({
      allowPrivateTargets: true,
      lookup: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    const res = await c.fetch({ url: `http://loop.test:${server.port}/`, requireHttps: false });
    assert.equal(res.status, 200);
    assert.equal(res.body.toString(), 'reached');
    assert.equal(res.address, '127.0.0.1');
    // The scheme rule still holds.
    const err = await c.fetch({ url: `http://loop.test:${server.port}/` }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof OutboundError);
    assert.equal(err.code, 'not_https');
    assert.deepEqual(await c.checkTarget(`https://loop.test:${server.port}/`), { ok: true });
    const bad = await c.checkTarget('ftp://loop.test/');
    assert.equal(!bad.ok && bad.code, 'invalid_url');
  });
});
