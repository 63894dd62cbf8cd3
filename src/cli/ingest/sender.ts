import { setTimeout as sleep } from 'node:timers/promises';
import { describeFetchError } from '../client.js';
import { CliError } from '../errors.js';
import { ndjsonBody, type Batch } from './batches.js';

/** A record that was not stored, by its line in the input. */
export interface Refusal {
  line: number;
  reason: string;
}

export interface SendOptions {
  /** `<base>/ingest?key=…&collection=…`. */
  url: string;
  /** Prefix of every idempotency key of the run; the same on `--resume`. */
  runId: string;
  /** Attempts after the first for network errors, 429, 5xx (503 waits its `Retry-After`). */
  retries: number;
  /** Refuse the whole run on a record the server refuses (`--atomic`), instead of dropping it and going on. */
  atomic: boolean;
  /** Cap on one wait between attempts, ms. */
  maxWaitMs?: number;
  onRetry?(why: string, waitMs: number): void;
}

export interface SendResult {
  accepted: number;
  refusals: Refusal[];
}

/** Retries ran out: the run stops and can be resumed. */
export class RetriesExhausted extends CliError {}

/**
 * Send one batch until the server acknowledges it. Every attempt carries the batch's
 * `Idempotency-Key`, so an attempt whose answer was lost but whose records were stored is answered
 * from the stored result on retry, never stored twice (docs/ingest.md, "Idempotent retries"). A
 * record the server refuses (400 `frame_invalid`, naming its line) is dropped and the rest sent
 * again under a key of its own (new body, new key), unless `atomic`.
 */
export async function sendBatch(batch: Batch, opts: SendOptions): Promise<SendResult> {
  let records = batch.records;
  const refusals: Refusal[] = [];
  let attempt = 0;
  while (records.length > 0) {
    const key = `${opts.runId}-${batch.index}${refusals.length > 0 ? `-r${refusals.length}` : ''}`;
    let res: Response;
    let text: string;
    try {
      res = await fetch(opts.url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-ndjson', 'idempotency-key': key },
        // The reader's bytes while no record was taken out; rebuilt from the texts after.
        body: records === batch.records && batch.body !== undefined ? batch.body : ndjsonBody(records),
      });
      text = await res.text();
    } catch (err) {
      await backoff(`cannot reach the server (${describeFetchError(err)})`, null);
      continue;
    }
    let env: {
      data?: { accepted?: number };
      error?: { code: string; message: string; details?: { line?: number; reason?: string } } | null;
    } = {};
    try {
      env = JSON.parse(text);
    } catch {
      // A proxy's error page: judged by its status below.
    }
    if (res.status === 202 || res.status === 200) return { accepted: env.data?.accepted ?? records.length, refusals };
    const code = env.error?.code ?? `http_${res.status}`;
    const message = env.error?.message ?? `HTTP ${res.status}`;
    if (res.status === 429 || res.status >= 500) {
      await backoff(`${code}: ${message}`, res.headers.get('retry-after'));
      continue;
    }
    const line = env.error?.details?.line;
    if (
      res.status === 400 &&
      code === 'frame_invalid' &&
      typeof line === 'number' &&
      line >= 1 &&
      line <= records.length
    ) {
      const bad = records[line - 1]!;
      const refusal = { line: bad.line, reason: env.error?.details?.reason ?? message };
      if (opts.atomic) {
        throw new CliError(
          `line ${bad.line}: the server refused the record (${refusal.reason}); --atomic stops here: batches before this one were stored`,
          1,
          code,
          { refusals: [refusal], batch: batch.index },
        );
      }
      refusals.push(refusal);
      records = records.filter((_, i) => i !== line - 1);
      continue;
    }
    if (res.status === 401)
      throw new CliError(
        `The ingest key was refused (${code}): ${message}. Check --ingest-key, or run again to make a new one`,
        1,
        code,
      );
    throw new CliError(
      `The server refused batch ${batch.index} (lines ${batch.records[0]!.line}–${batch.records[batch.records.length - 1]!.line}): ${message} (${code}, HTTP ${res.status})`,
      1,
      code,
      env.error?.details,
    );
  }
  return { accepted: 0, refusals };

  async function backoff(why: string, retryAfter: string | null): Promise<void> {
    attempt++;
    if (attempt > opts.retries)
      throw new RetriesExhausted(
        `batch ${batch.index}: ${why}; gave up after ${opts.retries} retries`,
        1,
        'retries_exhausted',
      );
    const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : NaN;
    const wait = Math.min(
      opts.maxWaitMs ?? 60_000,
      Number.isFinite(seconds) ? seconds * 1000 : 250 * 2 ** Math.min(attempt - 1, 7),
    );
    opts.onRetry?.(why, wait);
    await sleep(wait);
  }
}
