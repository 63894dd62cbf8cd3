import { setTimeout as sleep } from 'node:timers/promises';
import { CliError } from '../errors.js';
import { ndjsonBody, type Batch, type BatchRecord } from './batches.js';
import { describePostError, type IngestPoster, type PostAnswer } from './http-post.js';
import { recordRefusal } from './record-check.js';

/** A record that was not stored, by its line in the input. */
export interface Refusal {
  line: number;
  reason: string;
}

export interface SendOptions {
  /** Keep-alive connections to `<base>/ingest?key=…&collection=…`. */
  poster: IngestPoster;
  /** Prefix of every idempotency key of the run; the same on `--resume`. */
  runId: string;
  /** Attempts after the first for network errors, 429, 5xx (503 waits its `Retry-After`). */
  retries: number;
  /** Refuse the whole run on a record the server refuses (`--atomic`), instead of dropping it and going on. */
  atomic: boolean;
  /**
   * When the server refuses a line of a batch sent as the reader's bytes, check every line of the
   * batch with the server's rules (record-check.ts) and leave out all the bad ones at once, instead
   * of one round trip per bad line (`--no-check`: the server's refusals only, one at a time).
   */
  check: boolean;
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
 * again under a key of its own (new body, new key), unless `atomic`. A batch of the reader's bytes
 * is checked line by line only then (`check`), so a file without bad records is never parsed by the
 * CLI: the server checks every body anyway.
 */
export async function sendBatch(batch: Batch, opts: SendOptions): Promise<SendResult> {
  let records: BatchRecord[] = batch.records;
  const refusals: Refusal[] = [];
  let attempt = 0;
  /** How many times the body changed (records left out, text re-encoded): each body has its own key. */
  let version = 0;
  while (records.length > 0) {
    const key = `${opts.runId}-${batch.index}${version > 0 ? `-r${version}` : ''}`;
    let res: PostAnswer;
    const raw = records === batch.records && batch.body !== undefined;
    try {
      // The reader's bytes while no record was taken out; rebuilt from the texts after.
      res = await opts.poster.post(
        { 'content-type': 'application/x-ndjson', 'idempotency-key': key },
        raw ? batch.body! : ndjsonBody(records),
      );
    } catch (err) {
      await backoff(`cannot reach the server (${describePostError(err)})`, null);
      continue;
    }
    const text = res.text;
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
      await backoff(`${code}: ${message}`, res.retryAfter);
      continue;
    }
    const line = env.error?.details?.line;
    if (raw && res.status === 400 && code === 'frame_invalid') {
      // The bytes as read: each line decoded (bytes that are not UTF-8 become U+FFFD, as the
      // record-by-record reader sends them) and, with `check`, the ones the server would refuse left
      // out (none with --atomic: its first pass checked them all).
      const good: BatchRecord[] = [];
      for (const r of records) {
        const text = r.text;
        const why = opts.check ? recordRefusal(text) : null;
        if (why) refusals.push({ line: r.line, reason: why });
        else good.push({ text, line: r.line });
      }
      records = good;
      version++;
      continue;
    }
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
      refusals.push({ ...refusal, reason: `server: ${refusal.reason}` });
      records = records.filter((_, i) => i !== line - 1);
      version++;
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
