/**
 * Reading JSON off its bytes, without decoding a string or building a value: the readers the ingest
 * front's NDJSON check (ingest/ndjson-check.ts) and the record templates (pipeline/template-*.ts,
 * record-templates.ts) both use, so both read the grammar alike. Each reader takes the bytes, the
 * position of the token and the end of the record (`e`, never read past), and returns the
 * position after the token, or -1 when the bytes there are not that token as JSON writes it.
 *
 * These are the hottest loops of ingest: nothing here allocates. What a reader found beyond the
 * end (a string's escapes, a number's parts) is left in module state (`stringEscaped`,
 * `number*`), read right after the call. A reader that only steps over a token (`numberSkip`,
 * `plainStringEnd`, `trueEnd`…) writes no state at all.
 *
 * The readers compare bytes as literals and call only functions local to this module: an exported
 * binding is a module cell, read (and checked for its temporal dead zone) at every use, even from
 * inside this module. `skipSpace` calling the exported `isSpace` per byte, and the named byte
 * constants, made the NDJSON check 1.4× slower through these readers than through its own copies;
 * with literals it runs as fast (bench/ingest/ndjson-check.bench.ts compares the two).
 */

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const LBRACE = 0x7b;
export const RBRACE = 0x7d;
export const LBRACKET = 0x5b;
export const RBRACKET = 0x5d;
export const MINUS = 0x2d;
export const PLUS = 0x2b;
export const DOT = 0x2e;
export const ZERO = 0x30;
export const NINE = 0x39;
/** First bytes of `true`, `false`, `null`. */
export const LOWER_T = 0x74;
export const LOWER_F = 0x66;
export const LOWER_N = 0x6e;

/** JSON whitespace (the `\r` of a CRLF line end included: whitespace to JSON too). */
export const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
export const isDigit = (c: number): boolean => digit(c);
export const isHex = (c: number): boolean => hex(c);

// The readers below call these, not the exports above (see the module comment).
function digit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
function hex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
}

/** The first position at or after `i` that is not whitespace (`e` when none is). */
export function skipSpace(b: Uint8Array, i: number, e: number): number {
  for (; i < e; i++) {
    const c = b[i]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
  }
  return i;
}

/** Whether the last string `stringEnd` read had an escape (its bytes are then not its value). */
export let stringEscaped = false;

/**
 * End (after the closing quote) of the JSON string whose opening quote is at `i`, or -1 when it is
 * not one: a raw control character, an escape JSON does not have, no closing quote before `e`.
 * Sets `stringEscaped`.
 */
export function stringEnd(b: Uint8Array, i: number, e: number): number {
  stringEscaped = false;
  for (i++; i < e; i++) {
    const c = b[i]!;
    if (c === 0x22) return i + 1;
    if (c < 0x20) return -1;
    if (c !== 0x5c) continue;
    stringEscaped = true;
    if (++i >= e) return -1;
    const x = b[i]!;
    if (x === 0x75) {
      if (i + 4 >= e || !hex(b[i + 1]!) || !hex(b[i + 2]!) || !hex(b[i + 3]!) || !hex(b[i + 4]!)) return -1;
      i += 4;
    } else if (
      !(x === 0x22 || x === 0x5c || x === 0x2f || x === 0x62 || x === 0x66 || x === 0x6e || x === 0x72 || x === 0x74)
    )
      return -1;
  }
  return -1;
}

/** End (after the closing quote) of a string at `i` with no escape and no control character, or -1. */
export function plainStringEnd(b: Uint8Array, i: number, e: number): number {
  for (i++; i < e; i++) {
    const c = b[i]!;
    if (c === 0x22) return i + 1;
    if (c === 0x5c || c < 0x20) return -1;
  }
  return -1;
}

/** End of the literal `word` (`true`, `false`, `null`) at `i`, or -1 (the three below are the fast ones). */
export function literalEnd(b: Uint8Array, i: number, e: number, word: string): number {
  if (i + word.length > e) return -1;
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word.charCodeAt(k)) return -1;
  return i + word.length;
}

/** End of `true` at `i`, or -1: the bytes compared one by one, no string read (a hot path's literal). */
export function trueEnd(b: Uint8Array, i: number, e: number): number {
  return i + 4 <= e && b[i] === 0x74 && b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65 ? i + 4 : -1;
}

/** End of `false` at `i`, or -1. */
export function falseEnd(b: Uint8Array, i: number, e: number): number {
  return i + 5 <= e && b[i] === 0x66 && b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65
    ? i + 5
    : -1;
}

/** End of `null` at `i`, or -1. */
export function nullEnd(b: Uint8Array, i: number, e: number): number {
  return i + 4 <= e && b[i] === 0x6e && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c ? i + 4 : -1;
}

/**
 * End of the JSON number at `i` — the grammar `numberEnd` reads — or -1, and nothing else: no
 * digit is added up and no module state is written. For readers that only step over a number (the
 * NDJSON check), which need none of `numberEnd`'s parts.
 */
export function numberSkip(b: Uint8Array, i: number, e: number): number {
  if (i < e && b[i] === 0x2d) i++;
  if (i >= e) return -1;
  let c = b[i]!;
  if (c === 0x30) i++;
  else if (c > 0x30 && c <= 0x39) {
    for (i++; i < e && (c = b[i]!) >= 0x30 && c <= 0x39; ) i++;
  } else return -1;
  if (i < e && b[i] === 0x2e) {
    if (++i >= e || (c = b[i]!) < 0x30 || c > 0x39) return -1;
    for (i++; i < e && (c = b[i]!) >= 0x30 && c <= 0x39; ) i++;
  }
  if (i < e && ((c = b[i]!) === 0x65 || c === 0x45)) {
    if (++i < e && ((c = b[i]!) === 0x2b || c === 0x2d)) i++;
    if (i >= e || (c = b[i]!) < 0x30 || c > 0x39) return -1;
    for (i++; i < e && (c = b[i]!) >= 0x30 && c <= 0x39; ) i++;
  }
  return i;
}

/**
 * The parts of the last number `numberEnd` read. The digits' value (`numberMantissa[0]`, integer
 * and fraction digits as one integer, exact below 2^53) is in a typed array: a double kept in a
 * variable would be a heap allocation per number.
 */
export const numberMantissa = new Float64Array(1);
export let numberNegative = false;
/** Significant digits (leading zeros not counted), and how many of them are the integer part's. */
export let numberDigits = 0;
export let numberIntegerDigits = 0;
/** Digits after the point (0: no fraction), and the position after the last of them. */
export let numberFractionDigits = 0;
export let numberFractionEnd = -1;
/** Whether there is an exponent, and its value (kept exactly below 100,000 in magnitude). */
export let numberHasExponent = false;
export let numberExponent = 0;

/**
 * End of the JSON number at `i` — `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?` — or -1. Sets the
 * `number*` parts.
 */
export function numberEnd(b: Uint8Array, i: number, e: number): number {
  if (i >= e) return -1;
  const negative = b[i] === 0x2d;
  if (negative && ++i >= e) return -1;
  let c = b[i]!;
  let m = 0;
  let digits = 0;
  if (c === 0x30) c = b[++i]!;
  else if (c > 0x30 && c <= 0x39) {
    while (i < e && digit((c = b[i]!))) {
      m = m * 10 + (c - 0x30);
      digits++;
      i++;
    }
  } else return -1;
  const integerDigits = digits;
  let frac = 0;
  if (i < e && c === 0x2e) {
    i++;
    if (i >= e || !digit(b[i]!)) return -1;
    while (i < e && digit((c = b[i]!))) {
      m = m * 10 + (c - 0x30);
      if (m !== 0) digits++;
      frac++;
      i++;
    }
  }
  const fractionEnd = i;
  let exp = 0;
  const hasExponent = i < e && (c === 0x65 || c === 0x45);
  if (hasExponent) {
    i++;
    let sign = 1;
    if (i < e && (b[i] === 0x2b || b[i] === 0x2d)) sign = b[i++] === 0x2d ? -1 : 1;
    if (i >= e || !digit(b[i]!)) return -1;
    while (i < e && digit((c = b[i]!))) {
      // Past this the exponent is not kept exactly: `numberValueEnd` leaves the value to Number().
      if (exp < 100_000) exp = exp * 10 + (c - 0x30);
      i++;
    }
    exp *= sign;
  }
  numberMantissa[0] = m;
  numberNegative = negative;
  numberDigits = digits;
  numberIntegerDigits = integerDigits;
  numberFractionDigits = frac;
  numberFractionEnd = fractionEnd;
  numberHasExponent = hasExponent;
  numberExponent = exp;
  return i;
}

/** Powers of ten exact in float64 (Clinger's fast path). */
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * End of the JSON number at `i`, its value in `out[slot]` (a typed array, as a double kept in a
 * variable would be a heap allocation per number), or -1. Up to 15 significant digits and a power
 * of ten within ±22, the value is one correctly rounded operation on exact operands (what
 * JSON.parse returns); beyond that the text is read by Number(), which rounds as JSON.parse does.
 */
export function numberValueEnd(b: Uint8Array, i: number, e: number, out: Float64Array, slot: number): number {
  const start = i;
  i = numberEnd(b, i, e);
  if (i < 0) return -1;
  const m = numberMantissa[0]!;
  const exp = numberExponent;
  const p = exp - numberFractionDigits;
  // Digits read while below 2^53 are exact (a sum that passes 2^53 is at least 2^53 once rounded).
  if ((numberDigits <= 15 || m < 2 ** 53) && p >= -22 && p <= 22 && exp > -100_000 && exp < 100_000) {
    const v = p >= 0 ? m * POW10[p]! : m / POW10[-p]!;
    out[slot] = numberNegative ? -v : v;
  } else
    out[slot] = Number(
      b instanceof Buffer
        ? b.toString('latin1', start, i)
        : Buffer.from(b.buffer, b.byteOffset + start, i - start).toString('latin1'),
    );
  return i;
}
