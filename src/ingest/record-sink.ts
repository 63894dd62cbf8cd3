import { ApiError, toApiError } from '../errors.js';
import type { Logger } from '../log.js';
import type { IngestCore } from './ingest-core.js';
import { checkIdempotencyKey } from './ingest-core.js';
import type { RecordSink, SinkOptions, SinkOutcome, SinkTarget } from './record-sink-types.js';
import { tooLarge } from './transport.js';

/**
 * The record sink over the ingest core: in-process producers (pulls, checks) write records into a
 * collection of a source through the same path as the key-checked front — team/project/source
 * checks, the same parse and limits (records are framed as NDJSON, one line each, so the
 * per-record and per-request limits apply as over HTTP), backpressure, idempotency, telemetry and
 * `last_activity_at` — with no ingest key. Every refusal comes back as a value: the status and
 * error code the front would have answered. `attach` hands it the core once the front is mounted;
 * before that (and after `detach`) writes are refused with `service_unavailable`.
 */
export class IngestRecordSink implements RecordSink {
  private core: IngestCore | null = null;

  constructor(
    private readonly maxBytes: () => number,
    private readonly log: Logger,
  ) {}

  attach(core: IngestCore): void {
    this.core = core;
  }

  detach(): void {
    this.core = null;
  }

  async write(
    target: SinkTarget,
    records: ReadonlyArray<Record<string, unknown>>,
    opts: SinkOptions,
  ): Promise<SinkOutcome> {
    const core = this.core;
    if (!core)
      return refusal(
        new ApiError(
          'service_unavailable',
          'Ingest is not running (the server is starting or stopping); retry shortly',
        ),
      );
    try {
      const idempotencyKey =
        opts.idempotencyKey === undefined ? undefined : checkIdempotencyKey(opts.idempotencyKey, 'idempotency_key');
      const resolved = core.resolveSource(target.projectId, target.sourceId, target.collectionSlug, opts.producer);
      const body = frame(records, this.maxBytes());
      if (body instanceof ApiError) throw core.countError(target.projectId, body);
      core.admit(resolved, body.length, idempotencyKey);
      const outcome = await core.accept(resolved, body, { ndjson: true, idempotencyKey });
      return { ok: true, accepted: outcome.accepted, replayed: outcome.replayed };
    } catch (err) {
      const e = byIndex(toApiError(err));
      this.log.debug(
        { code: e.code, producer: opts.producer, project_id: target.projectId, source_id: target.sourceId },
        'record sink refused',
      );
      return refusal(e);
    }
  }
}

/**
 * The records as an NDJSON body. A value that is not a plain JSON object, or that JSON cannot
 * carry (a cycle, a BigInt), is refused here with `frame_invalid` naming its `index`: serialising
 * it would drop or change it silently. Returns the ApiError instead of the body when refused.
 */
function frame(records: ReadonlyArray<Record<string, unknown>>, maxBytes: number): Buffer | ApiError {
  if (!Array.isArray(records))
    return new ApiError('frame_invalid', 'records must be an array of objects', {
      details: { reason: 'not an array' },
    });
  const lines: string[] = new Array(records.length);
  let bytes = 0;
  for (let i = 0; i < records.length; i++) {
    const r: unknown = records[i];
    if (r === null || typeof r !== 'object' || Array.isArray(r)) {
      const problem = `is not a JSON object (got ${r === null ? 'null' : Array.isArray(r) ? 'an array' : typeof r})`;
      return new ApiError('frame_invalid', `Record at index ${i} ${problem}`, {
        details: { index: i, reason: problem },
      });
    }
    let line: string;
    try {
      line = JSON.stringify(r);
    } catch (err) {
      const problem = `cannot be written as JSON: ${(err as Error).message}`;
      return new ApiError('frame_invalid', `Record at index ${i} ${problem}`, {
        details: { index: i, reason: problem },
      });
    }
    bytes += Buffer.byteLength(line) + 1;
    // Stop serialising as soon as the batch cannot fit.
    if (bytes > maxBytes) return tooLarge(maxBytes, "records' ");
    lines[i] = line;
  }
  return Buffer.from(lines.join('\n'), 'utf8');
}

/** The parser names NDJSON lines (1-based); the producer handed an array, so name its index. */
function byIndex(e: ApiError): ApiError {
  const d = e.details as { line?: unknown; reason?: unknown } | undefined;
  if (e.code !== 'frame_invalid' || typeof d?.line !== 'number') return e;
  const index = d.line - 1;
  return new ApiError('frame_invalid', `Record at index ${index} ${String(d.reason)}`, {
    details: { index, reason: d.reason },
    cause: e,
  });
}

function refusal(e: ApiError): SinkOutcome {
  const retry = e.headers['retry-after'];
  return {
    ok: false,
    status: e.status,
    code: e.code,
    message: e.message,
    ...(retry !== undefined ? { retryAfterSeconds: Number(retry) } : {}),
    ...(e.details !== undefined ? { details: e.details } : {}),
  };
}
