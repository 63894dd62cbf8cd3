/**
 * Both ends of the wire between a worker thread and a view's transform context.
 *
 * Inside the isolate, `HARNESS_SOURCE` runs first in every script's context (before the user's
 * script, so it captures pristine builtins and removes the non-ECMAScript globals) and returns
 * `install(transform, progressBuffer, maxOutputChars)`, which returns
 * `run(recordsText, viewId, schemaVersionJson, svIndex, receivedAt, timestamps, fieldsJson, datesJson)`: one
 * call per (view, batch) that parses each record, builds its ctx, calls `transform` and answers
 * with ONE string. `schemaVersionJson` is one version for all records, or (with `svIndex`, an
 * Int32Array) the distinct versions, record i's being `[svIndex[i]]`. `fieldsJson` names the
 * view's declared output fields (null: none declared), `datesJson` the indexes of those typed
 * `date` (null: none).
 * Outside, `decodeRunResult` turns that string into a value. The context belongs to one user
 * script, which can rewrite anything in it (prototypes included), so the answer is treated as
 * untrusted text and checked here.
 *
 * Why records are parsed one by one from a U+001E-joined text rather than as one JSON array: the
 * isolate's young generation is small (isolated-vm sizes it from the memory limit: 2 MB at 128 MB),
 * so a whole parsed batch is copied by every scavenge and promoted; parsed one at a time, each
 * record dies young. Measured on 50,000 flat records: 172 ms as one array, 104 ms one by one.
 * For the same reason outputs are converted to JSON 128 at a time (−10% on the same batch).
 *
 * With declared fields, outputs go back column-wise: one JSON array of values per field, no keys
 * repeated per row and no object per row to parse outside (the worker coerces the columns as they
 * are); keys outside the fields are only counted. Measured on 50,000 flat records, 5 fields: the
 * answer is ~40% shorter and the worker's decode + coercion ~2× cheaper than with row objects.
 *
 * Wire format of the answer (JSON.stringify never emits a raw newline):
 *   `o<sources>\n<outputs JSON array>`  ok, no declared fields; `<sources>` is empty when output
 *                                       k came from record k for every k (the common case), else
 *                                       a JSON array of record indexes
 *   `c<sources>\n<extra>\n<columns>`     ok, declared fields: `<columns>` a JSON array of one
 *                                       array per field (values in output order; missing → null),
 *                                       `<extra>` a JSON object {key: outputs having it} for keys
 *                                       not declared
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

export const HARNESS_SOURCE = String.raw`(function () {
  'use strict';
  const parse = JSON.parse, stringify = JSON.stringify, isArray = Array.isArray;
  const getProto = Object.getPrototypeOf, ObjProto = Object.prototype, I32 = Int32Array;
  const keys = Object.keys, create = Object.create;
  const toText = String, exec = RegExp.prototype.exec, apply = Reflect.apply, DateCtor = Date;
  // Builtin methods as plain functions: a script that rewrites String.prototype breaks only itself.
  const uncurry = Function.prototype.bind.bind(Function.prototype.call);
  const indexOf = uncurry(String.prototype.indexOf), slice = uncurry(String.prototype.slice), charCodeAt = uncurry(String.prototype.charCodeAt);
  const toISO = uncurry(Date.prototype.toISOString), fromCharCode = String.fromCharCode;
  const push = uncurry(Array.prototype.push), join = uncurry(Array.prototype.join);
  const RS = '\u001e';
  const CHUNK = 128;
  const LOC = /${SCRIPT_FILENAME.replace('.', '\\.')}:(\d+):(\d+)/;
  const TOO_LONG = /string length/i;
  const MAX_MSG = ${MAX_ERROR_MESSAGE_CHARS};
  // Only the ECMAScript builtins stay: no WebAssembly, no shared memory (Atomics.wait could block).
  delete globalThis.WebAssembly;
  delete globalThis.SharedArrayBuffer;
  delete globalThis.Atomics;

  function describe(e) {
    let text;
    try {
      text = e !== null && typeof e === 'object' && typeof e.name === 'string' && typeof e.message === 'string' ? e.name + ': ' + e.message : toText(e);
    } catch (_) {
      text = 'a value that cannot be converted to text';
    }
    if (text.length > MAX_MSG) text = slice(text, 0, MAX_MSG) + '…';
    try {
      const stack = e !== null && typeof e === 'object' ? e.stack : undefined;
      const m = typeof stack === 'string' ? apply(exec, LOC, [stack]) : null;
      if (m !== null) text += ' (line ' + m[1] + ', column ' + m[2] + ')';
    } catch (_) {}
    return text;
  }
  function kind(v) {
    if (v === undefined) return 'undefined';
    if (v === null) return 'null';
    if (isArray(v)) return 'an array';
    const t = typeof v;
    if (t === 'object') {
      try {
        const c = getProto(v);
        const name = c !== null && typeof c.constructor === 'function' ? c.constructor.name : '';
        return name ? 'a ' + name + ' object' : 'an object that is not a plain object';
      } catch (_) {
        return 'an object that is not a plain object';
      }
    }
    return 'a ' + t;
  }
  function fail(r, i, m) {
    return 'e' + stringify({ r: r, i: i, m: m });
  }
  function isPlain(o) {
    if (typeof o !== 'object' || o === null) return false;
    const p = getProto(o);
    return p === ObjProto || p === null;
  }
  function badReturn(i, v) {
    return fail('bad_output', i, 'transform returned ' + kind(v) + ' for record ' + i + '; return a plain object, an array of plain objects, or null to skip the record');
  }
  function range(n) {
    const a = new Array(n);
    for (let k = 0; k < n; k++) a[k] = k;
    return a;
  }
  // A chunk of outputs did not convert: find the first output that does not. base = index of
  // the chunk's first output among all outputs; item(k) = what output k converts as.
  function locate(count, item, src, base, whole) {
    for (let k = 0; k < count; k++) {
      const i = src === null ? base + k : src[base + k];
      try {
        stringify(item(k));
      } catch (e) {
        if (e instanceof RangeError && apply(exec, TOO_LONG, [toText(e.message)]) !== null) return fail('output_too_large', i, 'the output of record ' + i + ' is too large to convert to JSON');
        return fail('bad_output', i, 'the output of record ' + i + ' cannot be converted to JSON: ' + describe(e));
      }
    }
    return fail('output_too_large', null, 'the outputs of the batch cannot be converted to JSON: ' + describe(whole));
  }
  // Row r of column chunks, as one array (for naming the output that failed or passed the cap).
  function rowOf(cols, r) {
    const a = [];
    for (let k = 0; k < cols.length; k++) push(a, cols[k][r]);
    return a;
  }

  // ctx times arrive as epoch ms; the script sees ISO-8601 strings. Date#toISOString costs ~0.5 µs;
  // a time in the UTC day of the previous one reuses its date part and is built by one
  // String.fromCharCode (a flat string: a '+'-built one is a tree of cons strings that the GC
  // copies and JSON.stringify flattens; measured 17 ms vs 53 ms per 50,000 kept in outputs).
  let dayStart = 0, dayEnd = -1, dc = [];
  function isoOf(ms) {
    if (ms >= dayStart && ms < dayEnd && ms % 1 === 0) {
      let r = ms - dayStart;
      const f = r % 1000; r = (r - f) / 1000;
      const s = r % 60; r = (r - s) / 60;
      const m = r % 60, h = (r - m) / 60;
      return fromCharCode(dc[0], dc[1], dc[2], dc[3], dc[4], dc[5], dc[6], dc[7], dc[8], dc[9], dc[10],
        48 + ((h / 10) | 0), 48 + (h % 10), 58, 48 + ((m / 10) | 0), 48 + (m % 10), 58, 48 + ((s / 10) | 0), 48 + (s % 10),
        46, 48 + ((f / 100) | 0), 48 + (((f / 10) | 0) % 10), 48 + (f % 10), 90);
    }
    if (!(ms >= -8.64e15 && ms <= 8.64e15)) return null;
    const text = toISO(new DateCtor(ms));
    // Only years 0000–9999 have the 11-character "YYYY-MM-DDT" date part.
    if (ms % 1 === 0 && text.length === 24) {
      const r = ms % 86400000;
      dayStart = ms - (r < 0 ? r + 86400000 : r);
      dayEnd = dayStart + 86400000;
      dc = [];
      for (let k = 0; k < 11; k++) dc.push(charCodeAt(text, k));
    } else {
      dayEnd = -1;
    }
    return text;
  }

  return function install(transform, progressBuffer, maxOutputChars) {
    const progress = new I32(progressBuffer);
    // One batch: records = their JSON texts joined by U+001E (which no JSON text holds raw); ctx
    // columns: view id, schema version(s) as JSON text, receivedAt/timestamp epoch ms per record.
    return function run(text, viewId, schemaVersionJson, svIndex, receivedAt, timestamps, fieldsJson, datesJson) {
      try {
        const n = receivedAt.length;
        if (timestamps.length !== n) return 'xreceivedAt and timestamp differ in length';
        let sv, fields = null, dates = null;
        try {
          sv = parse(schemaVersionJson);
          if (fieldsJson !== null) fields = parse(fieldsJson);
          // Absent (a caller of the harness that names no dates) or null: none.
          if (typeof datesJson === 'string') dates = parse(datesJson);
        } catch (e) {
          return 'xschema version or fields are not JSON: ' + describe(e);
        }
        // svIndex: record i's version is sv[svIndex[i]] (one string per distinct version).
        const svPer = svIndex !== null;
        if (svPer) {
          if (!isArray(sv) || svIndex.length !== n) return 'xschemaVersion index has ' + svIndex.length + ' entries for ' + n + ' records';
          for (let k = 0; k < n; k++) if (!(svIndex[k] >= 0 && svIndex[k] < sv.length)) return 'xschemaVersion index out of range at ' + k;
        }
        // Declared fields: outputs go back as one JSON array per field (no key repeated per row, no
        // object per row to rebuild outside), keys outside them counted in extra.
        const nf = fields === null ? 0 : fields.length;
        const slot = create(null), extra = create(null);
        for (let k = 0; k < nf; k++) slot[fields[k]] = k;
        const colParts = [];
        for (let k = 0; k < nf; k++) push(colParts, []);
        // Outputs are converted to JSON a chunk at a time, so they die young instead of being
        // promoted with the whole batch (the young generation is small; see the file comment).
        let out = [], done = 0, chars = 0;
        // A date field's value that is its record's ctx.timestamp or ctx.received_at, as the script
        // got it, goes back as those epoch ms: what the worker would read the string back as (an
        // integer time's 24-character ISO string, years 0000–9999), without writing and reading it.
        // outT/outR: the ctx strings of each output's record (kept only when a field is a date).
        const isDate = [];
        for (let k = 0; k < nf; k++) push(isDate, false);
        if (dates !== null) for (let q = 0; q < dates.length; q++) if (dates[q] >= 0 && dates[q] < nf) isDate[dates[q]] = true;
        const keepCtx = dates !== null && dates.length > 0;
        let outT = [], outR = [];
        const parts = [];
        // Record index of each output; null while output k came from record k.
        let src = null;
        // The chunk's outputs as texts to append: [rows JSON] or one [column JSON] per field.
        const chunkTexts = () => {
          if (nf === 0) {
            try {
              return [stringify(out)];
            } catch (e) {
              return locate(out.length, (k) => out[k], src, done, e);
            }
          }
          const m = out.length;
          const cols = [];
          for (let k = 0; k < nf; k++) {
            const c = new Array(m);
            for (let r = 0; r < m; r++) c[r] = null;
            push(cols, c);
          }
          for (let r = 0; r < m; r++) {
            const o = out[r];
            try {
              // Object.keys: the own enumerable keys, the ones JSON.stringify would write.
              const ks = keys(o);
              for (let q = 0; q < ks.length; q++) {
                const key = ks[q], v = o[key], k = slot[key];
                if (k === undefined) {
                  if (v !== undefined && typeof v !== 'function' && typeof v !== 'symbol') extra[key] = (extra[key] || 0) + 1;
                  continue;
                }
                if (isDate[k] && typeof v === 'string' && v.length === 24) {
                  const i = src === null ? done + r : src[done + r];
                  if (v === outT[r] && timestamps[i] % 1 === 0) {
                    cols[k][r] = timestamps[i];
                    continue;
                  }
                  if (v === outR[r] && receivedAt[i] % 1 === 0) {
                    cols[k][r] = receivedAt[i];
                    continue;
                  }
                }
                cols[k][r] = v;
              }
            } catch (e) {
              const i = src === null ? done + r : src[done + r];
              return fail('bad_output', i, 'the output of record ' + i + ' cannot be converted to JSON: ' + describe(e));
            }
          }
          const texts = [];
          try {
            for (let k = 0; k < nf; k++) push(texts, stringify(cols[k]));
          } catch (e) {
            return locate(m, (r) => rowOf(cols, r), src, done, e);
          }
          // flush names a record past the output cap from the columns.
          out = cols;
          return texts;
        };
        const flush = (i) => {
          progress[1] = src === null ? done : src[done];
          progress[2] = i;
          progress[0] = ${PROGRESS_SERIALIZING};
          const rows = out.length;
          const texts = chunkTexts();
          if (typeof texts === 'string') return texts;
          let size = 0;
          for (let k = 0; k < texts.length; k++) size += texts[k].length - 1;
          if (chars + size > maxOutputChars) {
            // Name the record whose output passes the cap.
            let at = i;
            for (let k = 0, total = chars; k < rows; k++) {
              total += stringify(nf === 0 ? out[k] : rowOf(out, k)).length + 1;
              if (total > maxOutputChars) {
                at = src === null ? done + k : src[done + k];
                break;
              }
            }
            return fail('output_too_large', at, 'the outputs of the batch exceed ' + maxOutputChars + ' characters of JSON at record ' + at);
          }
          chars += size;
          if (nf === 0) push(parts, slice(texts[0], 1, texts[0].length - 1));
          else for (let k = 0; k < nf; k++) push(colParts[k], slice(texts[k], 1, texts[k].length - 1));
          done += rows;
          out = [];
          if (keepCtx) {
            outT = [];
            outR = [];
          }
          return null;
        };
        const len = text.length;
        let p = 0, i = 0;
        let lastR = NaN, lastT = NaN, receivedIso = null, timestampIso = null;
        while (p < len) {
          if (i === n) return 'xthe records text holds more than the ' + n + ' records of the ctx';
          let e = indexOf(text, RS, p);
          if (e < 0) e = len;
          progress[0] = i;
          let record;
          try {
            record = parse(slice(text, p, e));
          } catch (err) {
            return 'xrecord ' + i + ' is not JSON: ' + describe(err);
          }
          p = e + 1;
          // The records of one request share their receive time: its ISO string is made once.
          const rms = receivedAt[i], tms = timestamps[i];
          if (rms !== lastR) receivedIso = isoOf((lastR = rms));
          if (tms !== lastT) timestampIso = isoOf((lastT = tms));
          const ctx = { view_id: viewId, schema_version: svPer ? sv[svIndex[i]] : sv, received_at: receivedIso, timestamp: timestampIso };
          let r;
          try {
            r = transform(record, ctx);
          } catch (err) {
            return fail('threw', i, 'transform threw on record ' + i + ': ' + describe(err));
          }
          if (typeof r !== 'object') return badReturn(i, r);
          if (r === null) {
            if (src === null) src = range(done + out.length);
          } else if (isArray(r)) {
            if (src === null) src = range(done + out.length);
            for (let k = 0; k < r.length; k++) {
              const o = r[k];
              if (!isPlain(o)) return fail('bad_output', i, 'transform returned an array holding ' + kind(o) + ' at position ' + k + ' for record ' + i + '; each element must be a plain object');
              push(out, o);
              push(src, i);
              if (keepCtx) {
                push(outT, timestampIso);
                push(outR, receivedIso);
              }
            }
          } else {
            const proto = getProto(r);
            if (proto !== ObjProto && proto !== null) return badReturn(i, r);
            push(out, r);
            if (src !== null) push(src, i);
            if (keepCtx) {
              push(outT, timestampIso);
              push(outR, receivedIso);
            }
          }
          if (out.length >= CHUNK) {
            const failed = flush(i);
            if (failed !== null) return failed;
          }
          i++;
        }
        if (i !== n) return 'xthe records text holds ' + i + ' records, the ctx ' + n;
        if (out.length > 0) {
          const failed = flush(n - 1);
          if (failed !== null) return failed;
        }
        const head = src === null ? '' : stringify(src);
        if (nf === 0) return 'o' + head + '\n[' + join(parts, ',') + ']';
        const cols = [];
        for (let k = 0; k < nf; k++) push(cols, '[' + join(colParts[k], ',') + ']');
        return 'c' + head + '\n' + stringify(extra) + '\n[' + join(cols, ',') + ']';
      } catch (e) {
        // The harness itself failed (e.g. stack exhausted while describing an error).
        return fail('threw', null, 'transform failed: ' + describe(e));
      }
    };
  };
})()`;

/** What a failed run reports. */
export type FailureReason = 'syntax' | 'no_transform_function' | 'threw' | 'bad_output' | 'timeout' | 'memory' | 'output_too_large';

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

/** The harness's answer before decoding (what crosses a process boundary cheaply: one string). */
export interface RawAnswer {
  status: 'answer';
  answer: string;
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
export function versionColumn(sv: SchemaVersions): { values: string | null | ReadonlyArray<string | null>; index: Int32Array | null } {
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

const REASONS = new Set<string>(['threw', 'bad_output', 'output_too_large']);

/**
 * Decodes the harness's answer (`fields`: the number of fields the call named, 0 for none).
 * Throws only when the caller broke the input contract (`x…`); anything the user's script could
 * have forged becomes a `bad_output` failure.
 */
export function decodeRunResult(answer: unknown, records: number, fields = 0): RunResult {
  const n = records;
  if (typeof answer !== 'string' || answer.length === 0) return forged('the transform context returned no result');
  const tag = answer.charCodeAt(0);
  if (tag === 0x78 /* x */) throw new Error(`transform sandbox: ${answer.slice(1)}`);
  if (tag === 0x65 /* e */) {
    let e: { r?: unknown; i?: unknown; m?: unknown };
    try {
      e = JSON.parse(answer.slice(1)) as typeof e;
    } catch {
      return forged('the transform context returned an unreadable error');
    }
    const reason = typeof e.r === 'string' && REASONS.has(e.r) ? (e.r as FailureReason) : 'threw';
    const recordIndex = Number.isSafeInteger(e.i) && (e.i as number) >= 0 ? (e.i as number) : null;
    return { status: 'failed', reason, recordIndex, message: typeof e.m === 'string' ? e.m : 'transform failed' };
  }
  if (tag !== (fields > 0 ? 0x63 /* c */ : 0x6f /* o */)) return forged('the transform context returned an unknown result');
  const nl = answer.indexOf('\n');
  if (nl < 0) return forged('the transform context returned a malformed result');
  const nl2 = fields > 0 ? answer.indexOf('\n', nl + 1) : nl;
  if (nl2 < 0) return forged('the transform context returned a malformed result');
  let body: unknown;
  let srcList: unknown = null;
  let extraIn: unknown = null;
  try {
    body = JSON.parse(answer.slice(nl2 + 1));
    if (nl > 1) srcList = JSON.parse(answer.slice(1, nl));
    if (fields > 0) extraIn = JSON.parse(answer.slice(nl + 1, nl2));
  } catch {
    return forged('the transform context returned outputs that are not JSON');
  }
  if (!Array.isArray(body)) return forged('the transform context returned outputs that are not an array');
  let rows: number;
  if (fields > 0) {
    if (body.length !== fields || !body.every((c) => Array.isArray(c) && c.length === (body as unknown[][])[0]!.length)) return forged('the transform context returned malformed columns');
    rows = (body[0] as unknown[]).length;
  } else rows = body.length;
  const sources = new Uint32Array(rows);
  if (srcList === null) {
    if (rows !== n) return forged('the transform context returned a wrong number of outputs');
    for (let k = 0; k < rows; k++) sources[k] = k;
  } else {
    if (!Array.isArray(srcList) || srcList.length !== rows) return forged('the transform context returned wrong record indexes');
    let last = 0;
    for (let k = 0; k < rows; k++) {
      const i = srcList[k] as number;
      if (!Number.isInteger(i) || i < last || i >= n) return forged('the transform context returned wrong record indexes');
      sources[k] = last = i;
    }
  }
  if (fields > 0) {
    if (extraIn === null || typeof extraIn !== 'object' || Array.isArray(extraIn)) return forged('the transform context returned malformed counts');
    const extra: Record<string, number> = {};
    for (const [k, v] of Object.entries(extraIn)) if (Number.isSafeInteger(v) && (v as number) > 0) extra[k] = v as number;
    return { status: 'ok', columns: body as unknown[][], extra, sources, rows };
  }
  for (let k = 0; k < rows; k++) {
    const o = body[k] as unknown;
    // A toJSON the script installed can turn an object into anything.
    if (typeof o !== 'object' || o === null || Array.isArray(o)) {
      const i = sources[k]!;
      return { status: 'failed', reason: 'bad_output', recordIndex: i, message: `the output of record ${i} did not convert to a JSON object (a toJSON method?)` };
    }
  }
  return { status: 'ok', outputs: body as Record<string, unknown>[], sources, rows };
}

function forged(message: string): RunResult {
  return { status: 'failed', reason: 'bad_output', recordIndex: null, message };
}

/** `[view-transform.js:2:13]` or `view-transform.js:2:13` in an isolated-vm message or stack. */
export function scriptLocation(text: string): { line: number; column: number } | null {
  const m = /view-transform\.js:(\d+):(\d+)/.exec(text);
  return m ? { line: Number(m[1]), column: Number(m[2]) } : null;
}
