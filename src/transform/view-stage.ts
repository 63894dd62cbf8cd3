import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DecodedRows } from '../records/decode.js';
import {
  coerceColumns,
  inferOutputSchema,
  rowsToColumns,
  type CoercionCounts,
  type OutputColumn,
  type OutputField,
} from './output-schema.js';
import type { TransformOutcome, TransformFailureReason } from './sandbox.js';
import type { BatchInput, ViewScript } from './sandbox.js';
import { viewFileBytes } from './view-file.js';
import { columnsRow } from './output-row.js';
import type { TemplateRecords } from './record-slots.js';
import { projectionOf, projectRecord, type Projection } from './record-projection.js';
import { SlotProjection } from './slot-projection.js';

/**
 * The worker's view stages (docs/architecture.md, "Stages"): transform the batch's records per
 * view in the sandbox, then build each view's output file. A view's failure is its outcome — a
 * value the commit records as that view's state — never an exception through the batch.
 */

/** One view the batch feeds, in an order where a parent comes before the views reading it. */
export interface ViewTask {
  viewId: string;
  /** null: reads the collection's records; else the view (earlier in the list) whose outputs it reads. */
  parentViewId: string | null;
  transformId: string;
  scriptHash: string;
  script: string;
  /** Declared output fields; empty: inferred from the first outputs (and saved by the commit). */
  outputSchema: OutputField[];
  /** Absolute directory of the view's files. */
  dir: string;
  /**
   * What each output consumer needs of this view's output, by consumer name (pipeline/output-consumer.ts;
   * e.g. `metrics`: the metrics aggregating the view and its late-data boundary). Absent: none consumes it.
   */
  consumers?: Readonly<Record<string, unknown>>;
  /**
   * Schema versions a person assigned to another transform of the view (docs/views.md, "Transforms"):
   * their records run that transform's script; every other record runs this task's. Absent: none.
   */
  routes?: ScriptRoute[];
}

/** Records of these schema versions run this transform's script. */
export interface ScriptRoute {
  transformId: string;
  scriptHash: string;
  script: string;
  versionIds: string[];
}

/** Hears each view's coerced output once its file is written (the output consumers are given it). */
export type OnViewOutput = (view: ViewTask, ts: Float64Array, columns: OutputColumn[]) => void;

export interface ViewWrittenFile {
  /** Relative to the view's directory. */
  path: string;
  rows: number;
  bytes: number;
  minTs: number;
  maxTs: number;
}

export type ViewOutcome =
  | {
      viewId: string;
      transformId: string;
      status: 'ok';
      file: ViewWrittenFile | null;
      rows: number;
      counts: CoercionCounts;
      inferredSchema: OutputField[] | null;
    }
  | {
      viewId: string;
      transformId: string;
      status: 'failed';
      reason: TransformFailureReason | 'parent_failed' | 'write_failed';
      message: string;
      recordIndex: number | null;
    };

/**
 * Records a view reads, column-wise. Their JSON is either `texts` (one string per record: a parent
 * view's outputs, records read back from files) or `bytes` (the batch's records as sent, which
 * the sandbox's input text is cut from directly: no string per record).
 */
export type ViewInput = (
  | { texts: string[]; bytes?: undefined; slots?: undefined }
  | { bytes: RecordBytes; texts?: undefined; slots?: RecordSlots }
) & {
  ts: Float64Array;
  received: Float64Array;
  seq: Float64Array;
  versions: (string | null)[];
};

/**
 * Runs one view's script over one batch input (a `TransformProcess` or `TransformSandbox`).
 * `handedOver`, when given, is called once the input is with a sandbox that runs on without this
 * thread (a child process that has read it), so the caller can do other work meanwhile; a runner
 * that runs in this thread never calls it.
 */
export type RunScript = (
  batch: BatchInput,
  view: ViewScript,
  handedOver?: () => void,
) => Promise<TransformOutcome> | TransformOutcome;

/** Characters of record text per sandbox call: the isolate parses them within its memory limit. */
export const SANDBOX_CALL_CHARS = 16 * 1024 * 1024;

/**
 * The templated records of a bytes input (record-slots.ts `SlotCapture`): records `from`..`to` − 1
 * as a sandbox call's `templates` (undefined: none is templated).
 */
export interface RecordSlots {
  range(from: number, to: number): TemplateRecords | undefined;
  pick(rows: readonly number[]): TemplateRecords | undefined;
}

/** Each record's byte range in its entry's body. */
export interface RecordBytes {
  bodies: readonly Buffer[];
  entry: Int32Array;
  start: Int32Array;
  end: Int32Array;
}

/** The collection's records of a batch as a view input: each record's bytes as sent (no re-serialising). */
export function collectionInput(
  rows: DecodedRows,
  versionOfRow: (row: number) => string | null,
  slots?: RecordSlots,
): ViewInput {
  const n = rows.count;
  const received = new Float64Array(n);
  const seq = new Float64Array(n);
  const versions = new Array<string | null>(n);
  for (let r = 0; r < n; r++) {
    const e = rows.entry[r]!;
    received[r] = rows.entries[e]!.received_at;
    seq[r] = rows.entries[e]!.seq;
    versions[r] = versionOfRow(r);
  }
  return {
    bytes: { bodies: rows.bodies, entry: rows.entry, start: rows.start, end: rows.end },
    ...(slots ? { slots } : {}),
    ts: rows.ts.slice(0, n),
    received,
    seq,
    versions,
  };
}

/** Upper bound of record `i`'s characters (its UTF-8 bytes, or its text's length). */
function sizeOf(input: ViewInput, i: number): number {
  return input.bytes ? input.bytes.end[i]! - input.bytes.start[i]! : input.texts[i]!.length;
}

/**
 * The buffer `joinedText` joins bytes into, kept for the next call (up to SCRATCH_KEEP_BYTES): not
 * a new one per sandbox call — memory outside the JS heap, whose growth starts the worker's
 * collections. `scratchLent` is the call's bytes while a sandbox call holds them (`runChunked`
 * takes them back once it has answered); a call made meanwhile gets a buffer of its own.
 */
let scratch = Buffer.alloc(0);
let scratchLent: Uint8Array | null = null;
const SCRATCH_KEEP_BYTES = 32 << 20;

/**
 * Records `from`..`to` − 1 as the sandbox's input: their JSON texts joined by U+001E, as UTF-8
 * bytes when the input is bytes (decoded where the sandbox runs), with their `templates` (as
 * given, or cut down with the records). With a `projection`, each record is cut down to what the
 * script reads: a parsed one's JSON (record-projection.ts), a templated one's shape, values and
 * text (slot-projection.ts).
 */
function joinedText(
  input: ViewInput,
  from: number,
  to: number,
  projection: Projection | null,
  templates: TemplateRecords | undefined,
): { text: string | Uint8Array; templates: TemplateRecords | undefined; slots: SlotProjection | null } {
  const b = input.bytes;
  if (!b) return { text: input.texts.slice(from, to).join('\u001e'), templates, slots: null };
  let size = 0;
  for (let i = from; i < to; i++) size += b.end[i]! - b.start[i]! + 1;
  const lend = scratchLent === null;
  let out = lend ? scratch : Buffer.allocUnsafeSlow(Math.max(0, size - 1));
  if (out.length < size - 1) {
    out = Buffer.allocUnsafeSlow(Math.max(size, Math.min(2 * out.length, SCRATCH_KEEP_BYTES)));
    if (out.length <= SCRATCH_KEEP_BYTES) scratch = out;
  }
  let at = 0;
  const slots = projection !== null && templates !== undefined ? new SlotProjection(templates, projection) : null;
  if (projection !== null) {
    for (let i = from; i < to; i++) {
      if (i > from) out[at++] = 0x1e;
      const body = b.bodies[b.entry[i]!]!;
      const w = slots === null ? -1 : slots.write(i - from, body, b.start[i]!, out, at);
      at = w >= 0 ? w : projectRecord(body, b.start[i]!, b.end[i]!, projection, out, at);
    }
  } else
    for (let i = from; i < to; ) {
      if (i > from) out[at++] = 0x1e;
      // Records one byte apart in the same body (NDJSON lines, array elements) are copied in one go
      // and the byte between them made the separator: one native copy per run, not per record.
      const e = b.entry[i]!;
      const first = b.start[i]!;
      let j = i;
      while (j + 1 < to && b.entry[j + 1] === e && b.start[j + 1] === b.end[j]! + 1) j++;
      const base = at - first;
      at += b.bodies[e]!.copy(out, at, first, b.end[j]!);
      for (let k = i; k < j; k++) out[base + b.end[k]!] = 0x1e;
      i = j + 1;
    }
  const bytes = out.subarray(0, at);
  if (lend && out === scratch) scratchLent = bytes;
  return { text: bytes, templates: slots === null ? templates : slots.templates(), slots };
}

/**
 * Run every view of the batch and write its file; outcomes in task order. Rejects only when the
 * sandbox breaks its contract, after removing the files it wrote for earlier views (the caller
 * has no outcomes to remove them by).
 */
export async function transformViewsStage(args: {
  base: ViewInput;
  views: readonly ViewTask[];
  firstSeq: number;
  run: RunScript;
  fileName?: string;
  onOutput?: OnViewOutput;
}): Promise<ViewOutcome[]> {
  const outcomes: ViewOutcome[] = [];
  try {
    return await transformEach(args, outcomes);
  } catch (err) {
    const dirs = new Map(args.views.map((v) => [v.viewId, v.dir]));
    removeViewFiles((id) => dirs.get(id)!, outcomes);
    throw err;
  }
}

async function transformEach(
  args: {
    base: ViewInput;
    views: readonly ViewTask[];
    firstSeq: number;
    run: RunScript;
    fileName?: string;
    onOutput?: OnViewOutput;
  },
  outcomes: ViewOutcome[],
): Promise<ViewOutcome[]> {
  const inputs = new Map<string, ViewInput>();
  for (const v of args.views) {
    const input = v.parentViewId === null ? args.base : inputs.get(v.parentViewId);
    if (!input) {
      outcomes.push({
        viewId: v.viewId,
        transformId: v.transformId,
        status: 'failed',
        reason: 'parent_failed',
        message: `its parent view ${v.parentViewId} produced no output for this batch`,
        recordIndex: null,
      });
      continue;
    }
    const ran = await runRouted(input, v, args.run);
    if (ran.status === 'failed') {
      const { transformId, ...failure } = ran;
      outcomes.push({ viewId: v.viewId, transformId, ...failure });
      continue;
    }
    const { out, sources } = ran;
    const schema = v.outputSchema.length > 0 ? v.outputSchema : inferOutputSchema(out.rows ?? []);
    const raw = out.columns ? out : rowsToColumns(out.rows, schema);
    // The raw columns are this stage's own (decoded for it): coerced where they are.
    const { columns, counts } = coerceColumns(raw.columns as unknown[][], raw.extra, schema, true);
    const m = sources.length;
    // One output per record, in order (the common case): the records' own columns, not copies.
    const same = isIdentity(sources, input.ts.length);
    const pick = <T, A extends { [i: number]: T }>(a: ArrayLike<T>, into: A): A => {
      for (let i = 0; i < m; i++) into[i] = a[sources[i]!]!;
      return into;
    };
    const ts = same ? input.ts : pick(input.ts, new Float64Array(m));
    const seq = same ? input.seq : pick(input.seq, new Float64Array(m));
    let file: ViewWrittenFile | null = null;
    if (m > 0) {
      try {
        file = writeViewFile(v.dir, args.fileName ?? `b${args.firstSeq}.parquet`, viewFileBytes(ts, seq, columns), ts);
      } catch (err) {
        outcomes.push({
          viewId: v.viewId,
          transformId: v.transformId,
          status: 'failed',
          reason: 'write_failed',
          message: `writing the view's file failed: ${(err as Error)?.message ?? String(err)}`,
          recordIndex: null,
        });
        continue;
      }
    }
    if (m > 0) args.onOutput?.(v, ts, columns);
    // Views reading this one get its rows as stored — the form its backfill reads back from its
    // files, so live and backfilled records of a view of a view are alike (docs/views.md).
    if (args.views.some((w) => w.parentViewId === v.viewId)) {
      const texts = new Array<string>(m);
      for (let i = 0; i < m; i++) texts[i] = JSON.stringify(columnsRow(columns, i));
      const received = same ? input.received : pick(input.received, new Float64Array(m));
      const versions = same ? input.versions : pick(input.versions, new Array<string | null>(m));
      inputs.set(v.viewId, { texts, ts, received, seq, versions });
    }
    outcomes.push({
      viewId: v.viewId,
      transformId: v.transformId,
      status: 'ok',
      file,
      rows: m,
      counts,
      inferredSchema: v.outputSchema.length > 0 ? null : schema,
    });
  }
  return outcomes;
}

/** True when `sources` maps output k to record k for all `n` records. */
function isIdentity(sources: ArrayLike<number>, n: number): boolean {
  if (sources.length !== n) return false;
  for (let i = 0; i < n; i++) if (sources[i] !== i) return false;
  return true;
}

/** Remove the files `outcomes` wrote (their batch did not commit); `dirOf` names each view's directory. */
export function removeViewFiles(dirOf: (viewId: string) => string, outcomes: readonly ViewOutcome[]): void {
  for (const o of outcomes)
    if (o.status === 'ok' && o.file) rmSync(join(dirOf(o.viewId), o.file.path), { force: true });
}

/**
 * A view's outputs of one batch: row objects when it declares no fields (the stage infers its
 * schema from them), else one raw value array per declared field (see harness.ts).
 */
type Outputs =
  | { rows: Record<string, unknown>[]; columns?: undefined }
  | { columns: unknown[][]; extra: Record<string, number>; rows?: undefined };

type Ran =
  | { status: 'ok'; out: Outputs; sources: ArrayLike<number> }
  | { status: 'failed'; reason: TransformFailureReason; message: string; recordIndex: number | null };

/**
 * The view's records through its scripts: each routed schema version's records through its route's
 * transform, the rest through the task's; outputs in record order. A failure names its transform.
 */
async function runRouted(
  input: ViewInput,
  v: ViewTask,
  run: RunScript,
): Promise<Extract<Ran, { status: 'ok' }> | (Extract<Ran, { status: 'failed' }> & { transformId: string })> {
  const routes = v.routes ?? [];
  if (routes.length === 0) {
    const r = await runChunked(input, v, run);
    return r.status === 'failed' ? { ...r, transformId: v.transformId } : r;
  }
  const routeOf = new Map<string, number>();
  routes.forEach((r, k) => r.versionIds.forEach((id) => routeOf.set(id, k)));
  const parts: number[][] = Array.from({ length: routes.length + 1 }, () => []);
  for (let i = 0; i < input.ts.length; i++) parts[routeOf.get(input.versions[i] ?? '') ?? routes.length]!.push(i);
  const outs: Outputs[] = [];
  const sources: number[] = [];
  for (let k = 0; k <= routes.length; k++) {
    const rows = parts[k]!;
    if (rows.length === 0) continue;
    const script = k < routes.length ? routes[k]! : v;
    const r = await runChunked(
      subsetInput(input, rows),
      { ...v, scriptHash: script.scriptHash, script: script.script },
      run,
    );
    if (r.status === 'failed') {
      const recordIndex = r.recordIndex === null ? null : rows[r.recordIndex]!;
      return {
        ...r,
        message:
          r.recordIndex === null ? r.message : r.message.replace(`record ${r.recordIndex}`, `record ${recordIndex}`),
        recordIndex,
        transformId: script.transformId,
      };
    }
    outs.push(r.out);
    for (let j = 0; j < r.sources.length; j++) sources.push(rows[r.sources[j]!]!);
  }
  // Stable: outputs of one record keep their order.
  const order = Array.from(sources, (_, j) => j).sort((a, b) => sources[a]! - sources[b]! || a - b);
  const all = concatOutputs(outs);
  const pick = <T>(a: readonly T[]) => order.map((j) => a[j]!);
  return {
    status: 'ok',
    out: all.columns ? { columns: all.columns.map(pick), extra: all.extra } : { rows: pick(all.rows) },
    sources: pick(sources),
  };
}

/** The records `rows` (ascending indexes) of `input`, as an input of their own. */
function subsetInput(input: ViewInput, rows: readonly number[]): ViewInput {
  const pick = (a: Float64Array) => Float64Array.from(rows, (i) => a[i]!);
  const common = {
    ts: pick(input.ts),
    received: pick(input.received),
    seq: pick(input.seq),
    versions: rows.map((i) => input.versions[i]!),
  };
  const b = input.bytes;
  if (!b) return { texts: rows.map((i) => input.texts[i]!), ...common };
  const all = input.slots;
  // The subset's record k is the input's rows[k].
  const slots: RecordSlots | undefined = all && {
    range: (from, to) => all.pick(rows.slice(from, to)),
    pick: (list) => all.pick(list.map((k) => rows[k]!)),
  };
  return {
    bytes: {
      bodies: b.bodies,
      entry: Int32Array.from(rows, (i) => b.entry[i]!),
      start: Int32Array.from(rows, (i) => b.start[i]!),
      end: Int32Array.from(rows, (i) => b.end[i]!),
    },
    ...(slots ? { slots } : {}),
    ...common,
  };
}

/** One sandbox call per chunk of at most SANDBOX_CALL_CHARS; record indexes are the batch's. */
async function runChunked(input: ViewInput, v: ViewTask, run: RunScript): Promise<Ran> {
  const fields = v.outputSchema.map((f) => f.name);
  const types = v.outputSchema.map((f) => f.type);
  const outs: Outputs[] = [];
  const parts: Array<{ sources: ArrayLike<number>; from: number }> = [];
  const n = input.ts.length;
  for (let from = 0; from < n; ) {
    let to = from;
    let chars = 0;
    do chars += sizeOf(input, to++) + 1;
    while (to < n && chars + sizeOf(input, to) < SANDBOX_CALL_CHARS);
    const { text, templates, slots } = joinedText(
      input,
      from,
      to,
      input.bytes ? projectionOf(v.scriptHash, v.script) : null,
      input.slots?.range(from, to),
    );
    let out: TransformOutcome;
    try {
      out = await run(
        {
          recordsText: text,
          schemaVersion: input.versions.slice(from, to),
          receivedAt: input.received.subarray(from, to),
          timestamp: input.ts.subarray(from, to),
          ...(templates ? { templates } : {}),
        },
        {
          viewId: v.viewId,
          scriptHash: v.scriptHash,
          script: v.script,
          ...(fields.length > 0 ? { fields, types } : {}),
        },
      );
    } finally {
      if (text === scratchLent) scratchLent = null;
      slots?.release();
    }
    if (out.status !== 'ok') {
      const recordIndex = out.recordIndex === null ? null : out.recordIndex + from;
      // The sandbox names the record by its index in the call; name it by the batch's.
      const message =
        out.recordIndex === null
          ? out.message
          : out.message.replace(`record ${out.recordIndex}`, `record ${recordIndex}`);
      return { status: 'failed', reason: out.reason, message, recordIndex };
    }
    // A runner may answer rows though fields were named (e.g. a join's pass-through).
    outs.push(
      out.columns
        ? { columns: out.columns, extra: out.extra }
        : fields.length > 0
          ? rowsToColumns(out.outputs, v.outputSchema)
          : { rows: out.outputs },
    );
    parts.push({ sources: out.sources, from });
    from = to;
  }
  if (parts.length === 1 && parts[0]!.from === 0) return { status: 'ok', out: outs[0]!, sources: parts[0]!.sources };
  const sources: number[] = [];
  for (const p of parts) for (let i = 0; i < p.sources.length; i++) sources.push(p.sources[i]! + p.from);
  return {
    status: 'ok',
    out:
      outs.length === 0
        ? fields.length > 0
          ? { columns: fields.map(() => []), extra: {} }
          : { rows: [] }
        : concatOutputs(outs),
    sources,
  };
}

/** Outputs of several calls (all rows or all columns, one or more) as one. */
function concatOutputs(outs: readonly Outputs[]): Outputs {
  if (outs.length === 1) return outs[0]!;
  const first = outs[0]!;
  if (!first.columns) return { rows: outs.flatMap((o) => o.rows ?? []) };
  const extra: Record<string, number> = {};
  for (const o of outs) for (const [k, c] of Object.entries(o.columns ? o.extra : {})) extra[k] = (extra[k] ?? 0) + c;
  return { columns: first.columns.map((_, k) => outs.flatMap((o) => o.columns![k]!)), extra };
}

function writeViewFile(dir: string, name: string, bytes: Uint8Array, ts: Float64Array): ViewWrittenFile {
  mkdirSync(dir, { recursive: true });
  const abs = join(dir, name);
  writeFileSync(abs + '.tmp', bytes);
  renameSync(abs + '.tmp', abs);
  let minTs = Infinity;
  let maxTs = -Infinity;
  for (const t of ts) {
    if (t < minTs) minTs = t;
    if (t > maxTs) maxTs = t;
  }
  return { path: name, rows: ts.length, bytes: bytes.byteLength, minTs, maxTs };
}
