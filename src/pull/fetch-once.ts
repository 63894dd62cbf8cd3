import { OutboundError, type OutboundClient, type OutboundResponse, type OutboundTimings } from '../outbound/types.js';
import type { RequestConfig } from './records.js';

/** Limits of one fetch (docs/pulls-and-checks.md, "Limits"). */
export interface FetchLimits {
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  maxBytes: number;
}

/** Pulls: a body up to 10 MiB (decoded), 10 s to connect, 30 s to the head, 60 s for the body. */
export const PULL_LIMITS: FetchLimits = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 60_000,
  maxBytes: 10 * 1024 * 1024,
};
/** Checks: the body is read (download time) but never kept; tighter timeouts so a run fits its minute. */
export const CHECK_LIMITS: FetchLimits = {
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 15_000,
  bodyTimeoutMs: 15_000,
  maxBytes: 16 * 1024 * 1024,
};

/** The limits a node uses: the defaults, with `SLUICE_PULL_MAX_BYTES` and a `SLUICE_FETCH_TIMEOUT_MS` cap applied. */
export function fetchLimits(config: { pullMaxBytes: number; fetchTimeoutMs: number }): {
  pull: FetchLimits;
  check: FetchLimits;
} {
  const cap = (l: FetchLimits): FetchLimits => {
    if (config.fetchTimeoutMs <= 0) return l;
    const t = (ms: number) => Math.min(ms, config.fetchTimeoutMs);
    return {
      ...l,
      connectTimeoutMs: t(l.connectTimeoutMs),
      headersTimeoutMs: t(l.headersTimeoutMs),
      bodyTimeoutMs: t(l.bodyTimeoutMs),
    };
  };
  return {
    pull: cap({ ...PULL_LIMITS, maxBytes: config.pullMaxBytes || PULL_LIMITS.maxBytes }),
    check: cap(CHECK_LIMITS),
  };
}

export type FetchOnce =
  | { ok: true; res: OutboundResponse; elapsedMs: number }
  | {
      ok: false;
      stage: 'request' | 'response';
      code: string;
      error: string;
      elapsedMs: number;
      timings: Partial<OutboundTimings> | null;
    };

/**
 * One request through the guarded outbound client (HTTPS only, public addresses, checked on the
 * request and every redirect). Any HTTP status is an answer; a failure is a value with its stage.
 */
export async function fetchOnce(
  outbound: OutboundClient,
  config: RequestConfig,
  headers: Record<string, string>,
  limits: FetchLimits,
  signal?: AbortSignal,
): Promise<FetchOnce> {
  const started = performance.now();
  try {
    const res = await outbound.fetch({
      url: config.endpoint_url,
      method: config.method === 'post' ? 'POST' : 'GET',
      headers,
      ...(config.method === 'post' && config.request_body !== null ? { body: config.request_body } : {}),
      requireHttps: true,
      connectTimeoutMs: limits.connectTimeoutMs,
      headersTimeoutMs: limits.headersTimeoutMs,
      bodyTimeoutMs: limits.bodyTimeoutMs,
      maxBytes: limits.maxBytes,
      ...(signal ? { signal } : {}),
    });
    return { ok: true, res, elapsedMs: Math.round(res.timings.totalMs ?? performance.now() - started) };
  } catch (err) {
    const elapsedMs = Math.round(performance.now() - started);
    if (err instanceof OutboundError) {
      const error =
        err.code === 'too_large'
          ? `the response is larger than the limit of ${limits.maxBytes} bytes (SLUICE_PULL_MAX_BYTES): ${err.message}`
          : err.message;
      return { ok: false, stage: err.stage, code: err.code, error, elapsedMs, timings: err.timings ?? null };
    }
    return {
      ok: false,
      stage: 'request',
      code: 'unknown',
      error: err instanceof Error ? err.message : String(err),
      elapsedMs,
      timings: null,
    };
  }
}

/** "HTTP 503 Service Unavailable" for an answer that is not 2xx. */
export function statusError(res: Pick<OutboundResponse, 'status' | 'statusText'>): string {
  return `the endpoint answered HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
}
