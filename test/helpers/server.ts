import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config.js';
import { startSluice, type Sluice } from '../../src/server.js';
import type { Clock } from '../../src/clock.js';
import type { Logger } from '../../src/log.js';
import type { OutboundClient } from '../../src/outbound/types.js';

export const BOOTSTRAP_KEY = 'slk_test_bootstrap_key_0000000000000000000';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: {
    message: string;
    data: T;
    status: number;
    error: { code: string; message: string; details?: any } | null;
    pagination: { next_cursor: string | null; prev_cursor: string | null; limit: number } | null;
    endpoint: string;
  };
}

export interface CallOptions {
  body?: unknown;
  /** Raw body string/bytes, sent as is. */
  raw?: string | Uint8Array;
  /** Bearer secret; defaults to the bootstrap key; null sends no Authorization. */
  token?: string | null;
  headers?: Record<string, string>;
}

/** A real Sluice on 127.0.0.1 with a fresh data dir, plus a small HTTP client for it. */
export class TestServer {
  sluice!: Sluice;
  readonly dataDir: string;
  readonly env: Record<string, string>;

  /** Replaces the outbound client the config would make (kept across restarts). */
  outbound?: OutboundClient;

  private constructor(
    readonly clock: Clock | undefined,
    env: Record<string, string>,
    readonly log?: Logger,
  ) {
    this.dataDir = mkdtempSync(join(tmpdir(), 'sluice-test-'));
    this.env = {
      SLUICE_HOST: '127.0.0.1',
      SLUICE_PORT: '0',
      SLUICE_LOG_LEVEL: 'silent',
      SLUICE_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
      SLUICE_ADMIN_PASSWORD: 'admin-password',
      ...env,
      SLUICE_DATA_DIR: this.dataDir,
    };
  }

  /** `log` replaces the logger SLUICE_LOG_LEVEL would make (tests that read what was logged). */
  static async start(
    opts: { clock?: Clock; env?: Record<string, string>; log?: Logger; outbound?: OutboundClient } = {},
  ): Promise<TestServer> {
    const t = new TestServer(opts.clock, opts.env ?? {}, opts.log);
    if (opts.outbound) t.outbound = opts.outbound;
    await t.boot();
    return t;
  }

  get config(): Config {
    return this.sluice.services.config;
  }

  get url(): string {
    return this.sluice.url;
  }

  private async boot(): Promise<void> {
    const config = loadConfig(this.env);
    this.sluice = await startSluice({
      config,
      ...(this.clock ? { clock: this.clock } : {}),
      ...(this.log ? { log: this.log } : {}),
      ...(this.outbound ? { outbound: this.outbound } : {}),
    });
  }

  /** Stop and start again on the same data dir (a new port). */
  async restart(): Promise<void> {
    await this.sluice.stop();
    await this.boot();
  }

  async stop(): Promise<void> {
    await this.sluice.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  async call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    const token = opts.token === undefined ? BOOTSTRAP_KEY : opts.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | Uint8Array | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.url + path, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await res.text();
    let parsed: any;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${path}: response is not JSON (${res.status}): ${text.slice(0, 200)}`);
    }
    return { status: res.status, headers: res.headers, body: parsed };
  }

  get<T = any>(path: string, opts?: CallOptions) {
    return this.call<T>('GET', path, opts);
  }
  post<T = any>(path: string, body?: unknown, opts: CallOptions = {}) {
    return this.call<T>('POST', path, { ...opts, ...(body !== undefined ? { body } : {}) });
  }
  delete<T = any>(path: string, opts?: CallOptions) {
    return this.call<T>('DELETE', path, opts);
  }
}
