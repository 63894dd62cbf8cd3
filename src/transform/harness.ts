/**
 * Both ends of the wire between a worker thread and a view's transform context: what they say
 * and the constants they share. The inside end is harness/isolate-program.js (its text is
 * `HARNESS_SOURCE`, harness/program-source.ts), the outside end harness/decode-answer.ts.
 *
 * Inside the isolate, the harness runs first in every script's context (before the user's
 * script, so it captures pristine builtins and removes the non-ECMAScript globals) and returns
 * `install(transform, progressBuffer, maxOutputChars)`, which returns
 * `run(recordsText, viewId, schemaVersionJson, svIndex, receivedAt, timestamps, fieldsJson, typesJson,
 * tplIds, tplInts, tplNums, tplShapesJson)`: one
 * call per (view, batch) that parses (or builds) each record, builds its ctx, calls `transform` and answers
 * with ONE value (a string, or the column answer below). `schemaVersionJson` is one version for
 * all records, or (with `svIndex`, an Int32Array) the distinct versions, record i's being
 * `[svIndex[i]]`. `fieldsJson` names the view's declared output fields (null: none declared),
 * `typesJson` their declared types (null: not given; every column then comes back as JSON).
 * Outside, `decodeRunResult` turns that answer into a value. The context belongs to one user
 * script, which can rewrite anything in it (prototypes included), so the answer is treated as
 * untrusted and checked there.
 *
 * Why records are parsed one by one from a U+001E-joined text rather than as one JSON array: the
 * isolate's young generation is small (isolated-vm sizes it from the memory limit: 2 MB at 128 MB),
 * so a whole parsed batch is copied by every scavenge and promoted; parsed one at a time, each
 * record dies young. Measured on 50,000 flat records: 172 ms as one array, 104 ms one by one.
 * For the same reason outputs are converted to JSON 128 at a time (−10% on the same batch).
 *
 * Records matched by a worker's template need not be parsed (record-slots.ts): `tplIds` (an
 * Int32Array, or null) gives each record's shape id (-1: parse its text), `tplInts`/`tplNums` the
 * templated records' slot values one after the other, and `tplShapesJson` the JSON array of
 * `[id, description]` of shapes this context has not been given yet. Each shape is compiled once
 * per context into a factory — one object literal over the slot values, so the record is made as
 * JSON.parse makes it: own data properties defined in the same order (`__proto__` as a computed
 * key, an own property as JSON.parse makes it), the same strings, numbers (-0 included), nulls,
 * nested objects and arrays. The factories are made by the `Function` captured before the user's
 * script runs, from the description's keys as JSON string literals: no text of the user's becomes
 * code, and an object literal calls no setter the script may have put on Object.prototype.
 * Measured on the flat bench records in an isolate: 1.3–1.5 µs per record parsed, ~0.2 built.
 *
 * With declared fields, outputs go back column-wise (a `ColumnsAnswer` object, copied out of the
 * isolate and over IPC as is): each output's values are put in their columns as the script returns
 * it, keys outside the fields only counted. A `number` or `date` column holding numbers comes back
 * as a Float64Array and a `boolean` one as a Uint8Array (no JSON written, parsed or coerced for
 * them; a ctx time in a `date` field as its epoch ms), a `string` one of few distinct values as
 * those values and an Int32Array of indexes into them (a dictionary: event names, countries,
 * statuses; one with more than 64 distinct values and more than one per 4 outputs goes on as JSON),
 * any other column as the JSON text of its values, made a chunk at a time. Measured on 20,000 flat
 * records of the 5-field bench view: the isolate call 2.8–3.8 → 2.1–2.4 µs per record (with the
 * ctx time cache below), the worker's decode 0.3 → 0.07 µs.
 *
 * Wire format of a string answer (JSON.stringify never emits a raw newline):
 *   `o<sources>\n<outputs JSON array>`  ok, no declared fields; `<sources>` is empty when output
 *                                       k came from record k for every k (the common case), else
 *                                       a JSON array of record indexes
 *   `e<JSON {r: reason, i: record index|null, m: message}>`  the first failure of the batch
 *   `x<message>`                        the caller's input was not as documented
 */

/** The file name user scripts are compiled under; error locations are read from it. */
export const SCRIPT_FILENAME = 'view-transform.js';

/** Longest error message kept from a user error (the view stores it as error_message). */
export const MAX_ERROR_MESSAGE_CHARS = 1000;

/**
 * `progress[0]` while the harness converts a chunk of outputs to JSON; `progress[1]`/`[2]` are
 * then the first and last record of the chunk. Otherwise `progress[0]` is the running record.
 */
export const PROGRESS_SERIALIZING = -2;
/** Int32 slots of the progress buffer. */
export const PROGRESS_SLOTS = 3;
/** `progress[0]` before any record runs (parsing the input). */
export const PROGRESS_IDLE = -1;

/** What a failed run reports. */
export type FailureReason =
  | 'syntax'
  | 'no_transform_function'
  | 'threw'
  | 'bad_output'
  | 'timeout'
  | 'memory'
  | 'output_too_large';

export interface TransformFailure {
  status: 'failed';
  reason: FailureReason;
  recordIndex: number | null;
  message: string;
}

/**
 * A call's outputs: row objects when the call named no fields, else `columns[k]` the values of
 * declared field k for every output (missing → null; as the script returned them, through JSON)
 * and `extra` the number of outputs having each key outside the fields. `sources[k]` is the record
 * output k came from; `rows` the number of outputs.
 */
export type RunOk = { status: 'ok'; sources: Uint32Array; rows: number } & (
  | { outputs: Record<string, unknown>[]; columns?: undefined }
  | { columns: unknown[][]; extra: Record<string, number>; outputs?: undefined }
);

export type RunResult = RunOk | TransformFailure;

/**
 * A call's outputs column-wise, as the harness answers them when the call names its fields:
 * `src` '' or the JSON array of each output's record, `extra` the JSON object of key counts,
 * `columns[k]` field k's values — a JSON array text, a Float64Array (NaN: null), a Uint8Array
 * (0 false, 1 true, 2 null) or a `DictColumn` (strings).
 */
export interface ColumnsAnswer {
  src: string;
  extra: string;
  columns: Array<string | Float64Array | Uint8Array | DictColumn>;
}

/** A string column as its distinct strings (a JSON array text) and each output's index into them (-1: null). */
export interface DictColumn {
  strings: string;
  index: Int32Array;
}

/** The harness's answer before decoding (what crosses a process boundary cheaply: strings and typed arrays). */
export interface RawAnswer {
  status: 'answer';
  answer: string | ColumnsAnswer;
  /** Records of the batch (the answer's record indexes are checked against it). */
  records: number;
  /** Fields the call named (its answer holds that many columns); 0: rows. */
  fields: number;
}

/** `BatchInput.schemaVersion`: one for every record, one per record, or per record as an index into distinct values. */
export type SchemaVersions = string | null | ReadonlyArray<string | null> | VersionColumn;

/** Per-record schema versions as their distinct values and each record's index into them. */
export interface VersionColumn {
  values: ReadonlyArray<string | null>;
  index: Int32Array;
}

/**
 * A batch's schema versions as the harness takes them: one value for all records (`index` null),
 * or the distinct values with each record's index — not one string per record to serialise,
 * parse and keep (`BatchInput.schemaVersion` takes either form, or one value per record).
 */
export function versionColumn(sv: SchemaVersions): {
  values: string | null | ReadonlyArray<string | null>;
  index: Int32Array | null;
} {
  if (sv === null || typeof sv === 'string') return { values: sv, index: null };
  if (!Array.isArray(sv)) return sv as VersionColumn;
  const list = sv as ReadonlyArray<string | null>;
  const ids = new Map<string | null, number>();
  const index = new Int32Array(list.length);
  for (let i = 0; i < list.length; i++) {
    const v = list[i]!;
    let k = ids.get(v);
    if (k === undefined) ids.set(v, (k = ids.size));
    index[i] = k;
  }
  return { values: [...ids.keys()], index };
}

/** `[view-transform.js:2:13]` or `view-transform.js:2:13` in an isolated-vm message or stack. */
export function scriptLocation(text: string): { line: number; column: number } | null {
  const m = /view-transform\.js:(\d+):(\d+)/.exec(text);
  return m ? { line: Number(m[1]), column: Number(m[2]) } : null;
}
