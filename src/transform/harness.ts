/**
 * Both ends of the wire between a worker thread and a view's transform context.
 *
 * Inside the isolate, `HARNESS_SOURCE` runs first in every script's context (before the user's
 * script, so it captures pristine builtins and removes the non-ECMAScript globals) and returns
 * `install(transform, progressBuffer, maxOutputChars)`, which returns
 * `run(recordsText, viewId, schemaVersionJson, receivedAt, timestamps)`: one call per (view,
 * batch) that parses each record, builds its ctx, calls `transform` and answers with ONE string.
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
 * Wire format of the answer (JSON.stringify never emits a raw newline):
 *   `o<sources>\n<outputs JSON array>`  ok; `<sources>` is empty when output k came from record k
 *                                       for every k (the common case), else a JSON array of
 *                                       record indexes
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
  // the chunk's first output among all outputs.
  function locate(chunk, src, base, whole) {
    for (let k = 0; k < chunk.length; k++) {
      const i = src === null ? base + k : src[base + k];
      try {
        stringify(chunk[k]);
      } catch (e) {
        if (e instanceof RangeError && apply(exec, TOO_LONG, [toText(e.message)]) !== null) return fail('output_too_large', i, 'the output of record ' + i + ' is too large to convert to JSON');
        return fail('bad_output', i, 'the output of record ' + i + ' cannot be converted to JSON: ' + describe(e));
      }
    }
    return fail('output_too_large', null, 'the outputs of the batch cannot be converted to JSON: ' + describe(whole));
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
    return function run(text, viewId, schemaVersionJson, receivedAt, timestamps) {
      try {
        const n = receivedAt.length;
        if (timestamps.length !== n) return 'xreceivedAt and timestamp differ in length';
        let sv;
        try {
          sv = parse(schemaVersionJson);
        } catch (e) {
          return 'xschema version is not JSON: ' + describe(e);
        }
        const svPer = isArray(sv);
        if (svPer && sv.length !== n) return 'xschemaVersion has ' + sv.length + ' entries for ' + n + ' records';
        // Outputs are converted to JSON a chunk at a time, so they die young instead of being
        // promoted with the whole batch (the young generation is small; see the file comment).
        let out = [], done = 0, chars = 0;
        const parts = [];
        // Record index of each output; null while output k came from record k.
        let src = null;
        const flush = (i) => {
          progress[1] = src === null ? done : src[done];
          progress[2] = i;
          progress[0] = ${PROGRESS_SERIALIZING};
          let t;
          try {
            t = stringify(out);
          } catch (e) {
            return locate(out, src, done, e);
          }
          if (chars + t.length - 1 > maxOutputChars) {
            // Name the record whose output passes the cap.
            let at = i;
            for (let k = 0, total = chars; k < out.length; k++) {
              total += stringify(out[k]).length + 1;
              if (total > maxOutputChars) {
                at = src === null ? done + k : src[done + k];
                break;
              }
            }
            return fail('output_too_large', at, 'the outputs of the batch exceed ' + maxOutputChars + ' characters of JSON at record ' + at);
          }
          chars += t.length - 1;
          push(parts, slice(t, 1, t.length - 1));
          done += out.length;
          out = [];
          return null;
        };
        const len = text.length;
        let p = 0, i = 0;
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
          const ctx = { view_id: viewId, schema_version: svPer ? sv[i] : sv, received_at: isoOf(receivedAt[i]), timestamp: isoOf(timestamps[i]) };
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
            }
          } else {
            const proto = getProto(r);
            if (proto !== ObjProto && proto !== null) return badReturn(i, r);
            push(out, r);
            if (src !== null) push(src, i);
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
        return 'o' + (src === null ? '' : stringify(src)) + '\n[' + join(parts, ',') + ']';
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

export type RunResult = { status: 'ok'; outputs: Record<string, unknown>[]; sources: Uint32Array; rows: number } | TransformFailure;

/** The harness's answer before decoding (what crosses a process boundary cheaply: one string). */
export interface RawAnswer {
  status: 'answer';
  answer: string;
  /** Records of the batch (the answer's record indexes are checked against it). */
  records: number;
}

const REASONS = new Set<string>(['threw', 'bad_output', 'output_too_large']);

/**
 * Decodes the harness's answer. Throws only when the caller broke the input contract (`x…`);
 * anything the user's script could have forged becomes a `bad_output` failure.
 */
export function decodeRunResult(answer: unknown, records: number): RunResult {
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
  if (tag !== 0x6f /* o */) return forged('the transform context returned an unknown result');
  const nl = answer.indexOf('\n');
  if (nl < 0) return forged('the transform context returned a malformed result');
  let outputs: unknown;
  let srcList: unknown = null;
  try {
    outputs = JSON.parse(answer.slice(nl + 1));
    if (nl > 1) srcList = JSON.parse(answer.slice(1, nl));
  } catch {
    return forged('the transform context returned outputs that are not JSON');
  }
  if (!Array.isArray(outputs)) return forged('the transform context returned outputs that are not an array');
  const rows = outputs.length;
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
  for (let k = 0; k < rows; k++) {
    const o = outputs[k] as unknown;
    // A toJSON the script installed can turn an object into anything.
    if (typeof o !== 'object' || o === null || Array.isArray(o)) {
      const i = sources[k]!;
      return { status: 'failed', reason: 'bad_output', recordIndex: i, message: `the output of record ${i} did not convert to a JSON object (a toJSON method?)` };
    }
  }
  return { status: 'ok', outputs: outputs as Record<string, unknown>[], sources, rows };
}

function forged(message: string): RunResult {
  return { status: 'failed', reason: 'bad_output', recordIndex: null, message };
}

/** `[view-transform.js:2:13]` or `view-transform.js:2:13` in an isolated-vm message or stack. */
export function scriptLocation(text: string): { line: number; column: number } | null {
  const m = /view-transform\.js:(\d+):(\d+)/.exec(text);
  return m ? { line: Number(m[1]), column: Number(m[2]) } : null;
}
