import { lookup as dnsLookup } from 'node:dns/promises';
import { STATUS_CODES as STATUS_TEXT } from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { Client, errors as undiciErrors } from 'undici';
import { blockedAddressReason, stripBrackets } from './address-rule.js';
import { readBody } from './body-reader.js';
import { HeaderSet } from './header-set.js';
import { ConnectFailure, pinnedConnector, type ConnectionFacts } from './pinned-connector.js';
import {
  OutboundError,
  type OutboundClient,
  type OutboundErrorCode,
  type OutboundRequest,
  type OutboundResponse,
  type OutboundTimings,
} from './types.js';

/** One resolved address, as `dns.promises.lookup(host, { all: true })` answers. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has (injectable so tests can map names). */
export type OutboundLookup = (hostname: string) => Promise<ResolvedAddress[]>;

/** Defaults for the per-request limits (docs/outbound.md). */
export interface OutboundDefaults {
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
}

export const OUTBOUND_DEFAULTS: Readonly<OutboundDefaults> = Object.freeze({
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 30_000,
  maxBytes: 10 * 1024 * 1024,
  maxRedirects: 5,
});

/** Never more than this many redirects, whatever a request asks for. */
const REDIRECT_CEILING = 5;

export interface OutboundClientOptions {
  /** `SLUICE_ALLOW_PRIVATE_TARGETS=1`: lift the public-address rule (only that rule). */
  allowPrivateTargets: boolean;
  /** Default `dns.promises.lookup(host, { all: true, verbatim: true })`. */
  lookup?: OutboundLookup;
  /** Extra trusted CA certificate(s), added to Node's default roots (tests; NODE_EXTRA_CA_CERTS works too). */
  ca?: string | Buffer | Array<string | Buffer>;
  defaults?: Partial<OutboundDefaults>;
  /**
   * TEST ONLY: addresses treated as public although the rule would refuse them, so tests can
   * reach a loopback server while the guard stays on for every other address. Never set in
   * production code (server.ts does not).
   */
  testOnlyPublicAddresses?: ReadonlyArray<string>;
}

const defaultLookup: OutboundLookup = async (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Headers not carried to another origin on a redirect (a caller's `Host` named the first origin). */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization', 'host'];

/**
 * The guarded outbound client (docs/outbound.md): every host is resolved once, every address it
 * resolves to must be public (unless `allowPrivateTargets`), and the connection goes to the address
 * that was checked; each redirect hop is checked the same way.
 */
export function createOutboundClient(opts: OutboundClientOptions): OutboundClient {
  const lookup = opts.lookup ?? defaultLookup;
  const defaults: OutboundDefaults = { ...OUTBOUND_DEFAULTS, ...opts.defaults };
  // `ca` given to tls.connect replaces the default roots: add to them instead, in one context made
  // once (parsing every root certificate per connection would cost more than the handshake).
  const secureContext = opts.ca === undefined ? undefined : trustWith(opts.ca);
  const testPublic = new Set((opts.testOnlyPublicAddresses ?? []).map((a) => normalizeIp(a)));

  const blocked = (address: string): string | null => {
    if (opts.allowPrivateTargets || testPublic.has(normalizeIp(address))) return null;
    return blockedAddressReason(address);
  };

  /** Parse and check the scheme; throws OutboundError (stage request). */
  const parseTarget = (raw: string, requireHttps: boolean): URL => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundError('invalid_url', 'request', `"${raw}" is not an absolute URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new OutboundError('invalid_url', 'request', `Only http and https URLs can be called (got ${url.protocol})`);
    if (url.username || url.password)
      throw new OutboundError(
        'invalid_url',
        'request',
        'The URL carries credentials (user:password@); send them in a header instead',
      );
    if (requireHttps && url.protocol !== 'https:')
      throw new OutboundError('not_https', 'request', `Only https URLs are allowed (got ${url.origin})`);
    return url;
  };

  /** Resolve the host once and check every address; the first one is the one to dial. */
  const resolveChecked = async (url: URL): Promise<{ address: string; dnsMs: number }> => {
    const host = stripBrackets(url.hostname);
    const started = performance.now();
    let addresses: ResolvedAddress[];
    if (net.isIP(host)) addresses = [{ address: host, family: net.isIP(host) }];
    else {
      try {
        addresses = await lookup(host);
      } catch (err) {
        throw new OutboundError(
          'dns_failed',
          'request',
          `The host ${host} could not be resolved: ${(err as Error).message}`,
        );
      }
      if (addresses.length === 0) throw new OutboundError('dns_failed', 'request', `The host ${host} has no addresses`);
    }
    const dnsMs = performance.now() - started;
    // Every address must pass: a name answering one public and one private address is refused
    // whole, rather than trusting which of them a later lookup would pick.
    for (const a of addresses) {
      const why = blocked(a.address);
      if (why)
        throw new OutboundError(
          'blocked_address',
          'request',
          `${host === a.address ? 'The address' : `The host ${host} resolves to`} ${a.address}, which is ${why}: only public addresses can be called`,
        );
    }
    return { address: addresses[0]!.address, dnsMs };
  };

  return {
    async checkTarget(raw, o) {
      try {
        await resolveChecked(parseTarget(raw, o?.requireHttps ?? true));
        return { ok: true };
      } catch (err) {
        if (err instanceof OutboundError) return { ok: false, code: err.code, message: err.message };
        throw err;
      }
    },

    async fetch(req) {
      const requireHttps = req.requireHttps ?? true;
      const maxRedirects = Math.min(req.maxRedirects ?? defaults.maxRedirects, REDIRECT_CEILING);
      const totalStarted = performance.now();
      let url = parseTarget(req.url, requireHttps);
      let method = req.method ?? 'GET';
      let body = req.body;
      // Sent with the caller's spelling (a pull's headers go out as the user wrote them); looked up
      // and dropped case-insensitively (two spellings of one name: the later one wins).
      const headers = new HeaderSet(req.headers);
      if (!headers.has('accept-encoding')) headers.set('Accept-Encoding', 'gzip, br, deflate');
      for (let redirects = 0; ; redirects++) {
        if (req.signal?.aborted) throw new OutboundError('aborted', 'request', 'The request was aborted');
        const hop = await fetchOnce(
          url,
          method,
          headers,
          body,
          req,
          secureContext,
          defaults,
          await resolveChecked(url),
        );
        const location = hop.headers.location;
        if (!REDIRECT_STATUSES.has(hop.status) || maxRedirects === 0 || location === undefined) {
          const { response, timings } = hop;
          return { ...response, redirects, timings: { ...timings, totalMs: performance.now() - totalStarted } };
        }
        if (redirects >= maxRedirects)
          throw new OutboundError(
            'too_many_redirects',
            'request',
            `More than ${maxRedirects} redirects (last to ${location})`,
            hop.timings,
          );
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new OutboundError(
            'invalid_url',
            'request',
            `The redirect location "${location}" is not a URL`,
            hop.timings,
          );
        }
        next = parseTarget(next.href, requireHttps);
        if (next.origin !== url.origin) for (const h of CREDENTIAL_HEADERS) headers.delete(h);
        // 301/302/303 continue as GET without the body, as browsers do (HEAD stays HEAD).
        if ((hop.status === 301 || hop.status === 302 || hop.status === 303) && method !== 'HEAD') {
          method = 'GET';
          body = undefined;
          headers.delete('content-type');
          headers.delete('content-length');
        }
        url = next;
      }
    },
  };
}

interface Hop {
  status: number;
  headers: Record<string, string>;
  response: Omit<OutboundResponse, 'redirects' | 'timings'>;
  timings: Omit<OutboundTimings, 'totalMs'>;
}

/** One request to one checked address; a redirect's body is discarded, any other is read in full. */
async function fetchOnce(
  url: URL,
  method: string,
  headers: HeaderSet,
  body: string | Uint8Array | undefined,
  req: OutboundRequest,
  secureContext: tls.SecureContext | undefined,
  defaults: OutboundDefaults,
  checked: { address: string; dnsMs: number },
): Promise<Hop> {
  const https = url.protocol === 'https:';
  const facts: ConnectionFacts = { startedAt: 0, tcpAt: 0, tlsAt: 0, tlsExpiresAt: null };
  const connectTimeoutMs = req.connectTimeoutMs ?? defaults.connectTimeoutMs;
  const headersTimeoutMs = req.headersTimeoutMs ?? defaults.headersTimeoutMs;
  const bodyTimeoutMs = req.bodyTimeoutMs ?? defaults.bodyTimeoutMs;
  const port = url.port ? Number(url.port) : https ? 443 : 80;
  const client = new Client(url.origin, {
    connect: pinnedConnector(
      { address: checked.address, port, https, hostname: stripBrackets(url.hostname), secureContext, connectTimeoutMs },
      facts,
    ),
    headersTimeout: headersTimeoutMs,
    bodyTimeout: bodyTimeoutMs,
    pipelining: 1,
  });
  const sentAt = performance.now();
  const timings = (): Omit<OutboundTimings, 'totalMs'> => {
    const ready = facts.tlsAt || facts.tcpAt || sentAt;
    return {
      dnsMs: checked.dnsMs,
      connectMs: facts.tcpAt ? facts.tcpAt - facts.startedAt : 0,
      tlsMs: https && facts.tlsAt ? facts.tlsAt - facts.tcpAt : 0,
      firstByteMs: headAt ? headAt - Math.max(ready, sentAt) : 0,
      downloadMs: doneAt && headAt ? doneAt - headAt : 0,
    };
  };
  let headAt = 0;
  let doneAt = 0;
  try {
    let res;
    try {
      res = await client.request({
        path: url.pathname + url.search,
        method,
        headers: headers.pairs(),
        body,
        signal: req.signal,
        headersTimeout: headersTimeoutMs,
        bodyTimeout: bodyTimeoutMs,
      });
    } catch (err) {
      throw requestFailure(err, url, timings());
    }
    headAt = performance.now();
    const resHeaders = flatHeaders(res.headers);
    const base = {
      status: res.statusCode,
      statusText: statusText(res.statusCode),
      headers: resHeaders,
      url: url.href,
      address: checked.address,
      tlsExpiresAt: facts.tlsExpiresAt,
    };
    if (REDIRECT_STATUSES.has(res.statusCode) && resHeaders.location !== undefined) {
      // The body of a redirect is not kept (a 3xx returned as the answer has an empty body).
      await res.body.dump({ limit: 64 * 1024 }).catch(() => {});
      doneAt = performance.now();
      return {
        status: res.statusCode,
        headers: resHeaders,
        response: { ...base, body: Buffer.alloc(0) },
        timings: timings(),
      };
    }
    const maxBytes = req.maxBytes ?? defaults.maxBytes;
    let data: Buffer;
    try {
      data = await readBody(res.body, resHeaders['content-encoding'], maxBytes, performance.now() + bodyTimeoutMs);
    } catch (err) {
      doneAt = performance.now();
      throw responseFailure(err, timings());
    }
    doneAt = performance.now();
    return { status: res.statusCode, headers: resHeaders, response: { ...base, body: data }, timings: timings() };
  } finally {
    client.destroy().catch(() => {});
  }
}

function requestFailure(err: unknown, url: URL, timings: Partial<OutboundTimings>): OutboundError {
  if (err instanceof OutboundError) return err;
  const cause =
    err instanceof ConnectFailure
      ? err
      : (err as { cause?: unknown })?.cause instanceof ConnectFailure
        ? (err as { cause: ConnectFailure }).cause
        : null;
  if (cause) return withCause(new OutboundError(cause.kind, 'request', cause.message, timings), err);
  let code: OutboundErrorCode = 'connect_failed';
  let message = `The request to ${url.origin} failed: ${(err as Error)?.message ?? String(err)}`;
  if (err instanceof undiciErrors.HeadersTimeoutError) {
    code = 'timeout';
    message = `${url.origin} did not send response headers within the headers timeout`;
  } else if (err instanceof undiciErrors.ConnectTimeoutError) code = 'timeout';
  else if (err instanceof undiciErrors.RequestAbortedError || (err as Error)?.name === 'AbortError') {
    code = 'aborted';
    message = 'The request was aborted';
  }
  return withCause(new OutboundError(code, 'request', message, timings), err);
}

function responseFailure(err: unknown, timings: Partial<OutboundTimings>): OutboundError {
  if (err instanceof OutboundError) return new OutboundError(err.code, err.stage, err.message, timings);
  if (err instanceof undiciErrors.BodyTimeoutError)
    return withCause(
      new OutboundError('timeout', 'response', 'The response body stalled past the body timeout', timings),
      err,
    );
  if (err instanceof undiciErrors.RequestAbortedError || (err as Error)?.name === 'AbortError')
    return withCause(
      new OutboundError('aborted', 'response', 'The request was aborted while reading the body', timings),
      err,
    );
  return withCause(
    new OutboundError(
      'connect_failed',
      'response',
      `The connection failed while reading the body: ${(err as Error)?.message ?? String(err)}`,
      timings,
    ),
    err,
  );
}

function withCause(e: OutboundError, cause: unknown): OutboundError {
  Object.defineProperty(e, 'cause', { value: cause, enumerable: false });
  return e;
}

function flatHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h))
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

function statusText(status: number): string {
  return STATUS_TEXT[status] ?? '';
}

/** Contexts trusting the default roots plus extra CAs, by their PEM text (clients with the same CA share one). */
const contexts = new Map<string, tls.SecureContext>();

function trustWith(ca: string | Buffer | Array<string | Buffer>): tls.SecureContext {
  const extra = (Array.isArray(ca) ? ca : [ca]).map((c) => c.toString());
  const key = extra.join('\n');
  let ctx = contexts.get(key);
  if (!ctx) {
    if (contexts.size >= 16) contexts.clear();
    ctx = tls.createSecureContext({ ca: [...tls.rootCertificates, ...extra] });
    contexts.set(key, ctx);
  }
  return ctx;
}

function normalizeIp(a: string): string {
  const s = stripBrackets(a);
  return net.isIP(s) === 6 ? s.toLowerCase() : s;
}
