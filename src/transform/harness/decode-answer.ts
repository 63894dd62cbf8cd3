import type { ColumnsAnswer, DictColumn, FailureReason, RunResult } from '../harness.js';

/**
 * The outside end of the harness's wire (harness.ts has the format): its answer, which the user's
 * script could have forged, checked and turned into a `RunResult`.
 */

const REASONS = new Set<string>(['threw', 'bad_output', 'output_too_large']);

/**
 * Decodes the harness's answer (`fields`: the number of fields the call named, 0 for none).
 * Throws only when the caller broke the input contract (`x…`); anything the user's script could
 * have forged becomes a `bad_output` failure.
 */
export function decodeRunResult(answer: unknown, records: number, fields = 0): RunResult {
  const n = records;
  if (fields > 0 && typeof answer === 'object' && answer !== null)
    return decodeColumns(answer as Partial<ColumnsAnswer>, n, fields);
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
  if (tag !== 0x6f /* o */ || fields > 0) return forged('the transform context returned an unknown result');
  const nl = answer.indexOf('\n');
  if (nl < 0) return forged('the transform context returned a malformed result');
  let body: unknown;
  let srcList: unknown = null;
  try {
    body = JSON.parse(answer.slice(nl + 1));
    if (nl > 1) srcList = JSON.parse(answer.slice(1, nl));
  } catch {
    return forged('the transform context returned outputs that are not JSON');
  }
  if (!Array.isArray(body)) return forged('the transform context returned outputs that are not an array');
  const rows = body.length;
  const sources = sourcesOf(srcList, rows, n);
  if (sources === null)
    return forged(
      srcList === null
        ? 'the transform context returned a wrong number of outputs'
        : 'the transform context returned wrong record indexes',
    );
  for (let k = 0; k < rows; k++) {
    const o = body[k] as unknown;
    // A toJSON the script installed can turn an object into anything.
    if (typeof o !== 'object' || o === null || Array.isArray(o)) {
      const i = sources[k]!;
      return {
        status: 'failed',
        reason: 'bad_output',
        recordIndex: i,
        message: `the output of record ${i} did not convert to a JSON object (a toJSON method?)`,
      };
    }
  }
  return { status: 'ok', outputs: body as Record<string, unknown>[], sources, rows };
}

/** A `ColumnsAnswer` as value columns (typed ones read into arrays); anything malformed is forged. */
function decodeColumns(a: Partial<ColumnsAnswer>, n: number, fields: number): RunResult {
  if (
    typeof a.src !== 'string' ||
    typeof a.extra !== 'string' ||
    !Array.isArray(a.columns) ||
    a.columns.length !== fields
  )
    return forged('the transform context returned malformed columns');
  let srcList: unknown = null;
  let extraIn: unknown;
  const columns: unknown[][] = [];
  try {
    if (a.src !== '') srcList = JSON.parse(a.src);
    extraIn = JSON.parse(a.extra);
    for (const c of a.columns as unknown[]) {
      const values = valuesOf(c);
      if (values === null || values.length !== (columns[0] ?? values).length)
        return forged('the transform context returned malformed columns');
      columns.push(values);
    }
  } catch {
    return forged('the transform context returned outputs that are not JSON');
  }
  const rows = columns[0]!.length;
  const sources = sourcesOf(srcList, rows, n);
  if (sources === null)
    return forged(
      srcList === null
        ? 'the transform context returned a wrong number of outputs'
        : 'the transform context returned wrong record indexes',
    );
  if (extraIn === null || typeof extraIn !== 'object' || Array.isArray(extraIn))
    return forged('the transform context returned malformed counts');
  const extra: Record<string, number> = {};
  for (const [k, v] of Object.entries(extraIn))
    if (Number.isSafeInteger(v) && (v as number) > 0) extra[k] = v as number;
  return { status: 'ok', columns, extra, sources, rows };
}

/** One answered column as its values (null when it is not a column); a JSON text that does not parse throws. */
function valuesOf(c: unknown): unknown[] | null {
  if (typeof c === 'string') {
    const v = JSON.parse(c) as unknown;
    return Array.isArray(v) ? v : null;
  }
  if (c instanceof Float64Array) {
    const out = new Array<number | null>(c.length);
    for (let r = 0; r < c.length; r++) {
      const x = c[r]!;
      out[r] = x === x ? x : null;
    }
    return out;
  }
  if (
    c !== null &&
    typeof c === 'object' &&
    typeof (c as DictColumn).strings === 'string' &&
    (c as DictColumn).index instanceof Int32Array
  ) {
    const strings = JSON.parse((c as DictColumn).strings) as unknown;
    if (!Array.isArray(strings) || !strings.every((x) => typeof x === 'string')) return null;
    const index = (c as DictColumn).index;
    const out = new Array<string | null>(index.length);
    for (let r = 0; r < index.length; r++) {
      const x = index[r]!;
      if (x < -1 || x >= strings.length) return null;
      out[r] = x < 0 ? null : (strings[x] as string);
    }
    return out;
  }
  if (c instanceof Uint8Array) {
    const out = new Array<boolean | null>(c.length);
    for (let r = 0; r < c.length; r++) {
      const x = c[r]!;
      if (x > 2) return null;
      out[r] = x === 2 ? null : x === 1;
    }
    return out;
  }
  return null;
}

/** Each output's record: `list` (null: output k came from record k, then rows must be n), checked non-decreasing and in range. */
function sourcesOf(list: unknown, rows: number, n: number): Uint32Array | null {
  const sources = new Uint32Array(rows);
  if (list === null) {
    if (rows !== n) return null;
    for (let k = 0; k < rows; k++) sources[k] = k;
    return sources;
  }
  if (!Array.isArray(list) || list.length !== rows) return null;
  let last = 0;
  for (let k = 0; k < rows; k++) {
    const i = list[k] as number;
    if (!Number.isInteger(i) || i < last || i >= n) return null;
    sources[k] = last = i;
  }
  return sources;
}

function forged(message: string): RunResult {
  return { status: 'failed', reason: 'bad_output', recordIndex: null, message };
}
