/**
 * The guarded outbound HTTP client's contract: everything that calls out (pulls, checks,
 * notification deliveries) goes through one implementation of this (docs/outbound.md).
 */

export interface OutboundRequest {
  url: string;
  method?: 'GET' | 'POST' | 'HEAD';
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Default true: refuse `http:` URLs (and redirects to them). */
  requireHttps?: boolean;
  /** Milliseconds; defaults documented in docs/outbound.md. */
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  /** Largest decoded body read; past it the request fails with `too_large` (stage `response`). */
  maxBytes?: number;
  /** Default 5; 0 returns the 3xx as it is. */
  maxRedirects?: number;
  signal?: AbortSignal;
}

export interface OutboundTimings {
  dnsMs: number;
  connectMs: number;
  /** 0 for plain HTTP. */
  tlsMs: number;
  /** From the request sent to the response head. */
  firstByteMs: number;
  downloadMs: number;
  totalMs: number;
}

export interface OutboundResponse {
  status: number;
  statusText: string;
  /** Lowercased names. */
  headers: Record<string, string>;
  /** Decoded (gzip/br/deflate) body. */
  body: Buffer;
  /** The URL finally answered (after redirects). */
  url: string;
  /** The address connected to (the one that was checked). */
  address: string;
  redirects: number;
  timings: OutboundTimings;
  /** The server certificate's notAfter (HTTPS), else null. */
  tlsExpiresAt: string | null;
}

export type OutboundErrorCode =
  | 'invalid_url'
  | 'not_https'
  | 'blocked_address'
  | 'dns_failed'
  | 'connect_failed'
  | 'tls_failed'
  | 'timeout'
  | 'too_many_redirects'
  | 'too_large'
  | 'decode_failed'
  | 'aborted';

/** `request`: nothing usable came back; `response`: an answer came but could not be read in full. */
export type OutboundStage = 'request' | 'response';

export class OutboundError extends Error {
  constructor(
    readonly code: OutboundErrorCode,
    readonly stage: OutboundStage,
    message: string,
    /** Timings measured so far, when the failure came after a connection. */
    readonly timings?: Partial<OutboundTimings>,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

export interface OutboundClient {
  /** Throws OutboundError; any HTTP status (also 4xx/5xx) is a response. */
  fetch(req: OutboundRequest): Promise<OutboundResponse>;
  /** Check a URL as create/update routes do: scheme, and every address its host resolves to. */
  checkTarget(
    url: string,
    opts?: { requireHttps?: boolean },
  ): Promise<{ ok: true } | { ok: false; code: OutboundErrorCode; message: string }>;
}
