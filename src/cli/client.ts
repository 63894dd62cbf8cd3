import { CliError } from './errors.js';

/** The API's envelope (docs/api.md, "Envelope"). */
export interface Envelope<T = any> {
  message: string;
  data: T;
  status: number;
  error: { code: string; message: string; details?: unknown } | null;
  pagination: { next_cursor: string | null; prev_cursor: string | null; limit: number } | null;
  endpoint: string;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Bearer secret for this request instead of the client's (login's session token). */
  token?: string | null;
  headers?: Record<string, string>;
}

/** An HTTP client for `/v1`: one place that turns the envelope into data or a CliError. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string | undefined,
  ) {}

  /** The URL of `path` with `query` (undefined values left out). */
  url(path: string, query: RequestOptions['query'] = {}): string {
    const u = new URL(this.baseUrl.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v));
    return u.toString();
  }

  /** The whole envelope of a successful answer; a refusal throws CliError (exit 1) with the API's code and message. */
  async request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<Envelope<T>> {
    const token = opts.token === undefined ? this.apiKey : opts.token;
    if (token === undefined) {
      throw new CliError(
        'Not signed in: run `sluice login`, or set SLUICE_API_KEY (and SLUICE_URL)',
        1,
        'not_signed_in',
      );
    }
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    let res: Response;
    try {
      res = await fetch(this.url(path, opts.query), { method, headers, ...(body !== undefined ? { body } : {}) });
    } catch (err) {
      throw new CliError(`Cannot reach ${this.baseUrl}: ${describeFetchError(err)}`, 1, 'unreachable');
    }
    const text = await res.text();
    let env: Envelope<T>;
    try {
      env = JSON.parse(text) as Envelope<T>;
    } catch {
      throw new CliError(
        `${method} ${path}: the server answered ${res.status} without a JSON envelope (is ${this.baseUrl} a Sluice server?)`,
        1,
        'bad_response',
      );
    }
    if (!res.ok || env.error) throw refusal(res.status, env);
    return env;
  }

  async data<T = any>(method: string, path: string, opts?: RequestOptions): Promise<T> {
    return (await this.request<T>(method, path, opts)).data;
  }
}

/** A refused request as a CliError: 401 says plainly that the key was refused. */
export function refusal(status: number, env: Partial<Envelope>): CliError {
  const code = env.error?.code ?? `http_${status}`;
  const message = env.error?.message ?? `HTTP ${status}`;
  if (status === 401) {
    return new CliError(
      `Not signed in or key refused (${code}): ${message}. Run \`sluice login\` or check SLUICE_API_KEY`,
      1,
      code,
      env.error?.details,
    );
  }
  return new CliError(`${message} (${code}, HTTP ${status})`, 1, code, env.error?.details);
}

/** undici's fetch hides the reason in `cause`. */
export function describeFetchError(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}
