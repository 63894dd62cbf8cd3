/**
 * Reading JSON off its bytes, without decoding a string or building a value: the readers the ingest
 * front's NDJSON check (ingest/ndjson-check.ts) and the record templates (pipeline/template-*.ts,
 * record-templates.ts) both use, so both read the grammar alike. Each reader takes the bytes, the
 * position of the token and the end of the record (`e`, never read past), and returns the
 * position after the token, or -1 when the bytes there are not that token as JSON writes it.
 *
 * These are the hottest loops of ingest: nothing here allocates. What a reader found beyond the
 * end (a string's escapes, a number's parts) is left in module state (`stringEscaped`,
 * `number*`), read right after the call.
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
export const isDigit = (c: number): boolean => c >= ZERO && c <= NINE;
export const isHex = (c: number): boolean => (c >= ZERO && c <= NINE) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);

/** The first position at or after `i` that is not whitespace (`e` when none is). */
export function skipSpace(b: Uint8Array, i: number, e: number): number {
  for (; i < e; i++) if (!isSpace(b[i]!)) return i;
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
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return -1;
    if (c !== BACKSLASH) continue;
    stringEscaped = true;
    if (++i >= e) return -1;
    const x = b[i]!;
    if (x === 0x75) {
      if (i + 4 >= e || !isHex(b[i + 1]!) || !isHex(b[i + 2]!) || !isHex(b[i + 3]!) || !isHex(b[i + 4]!)) return -1;
      i += 4;
    } else if (
      !(
        x === QUOTE ||
        x === BACKSLASH ||
        x === 0x2f ||
        x === 0x62 ||
        x === 0x66 ||
        x === 0x6e ||
        x === 0x72 ||
        x === 0x74
      )
    )
      return -1;
  }
  return -1;
}

/** End (after the closing quote) of a string at `i` with no escape and no control character, or -1. */
export function plainStringEnd(b: Uint8Array, i: number, e: number): number {
  for (i++; i < e; i++) {
    const c = b[i]!;
    if (c === QUOTE) return i + 1;
    if (c === BACKSLASH || c < 0x20) return -1;
  }
  return -1;
}

/** End of the literal `word` (`true`, `false`, `null`) at `i`, or -1. */
export function literalEnd(b: Uint8Array, i: number, e: number, word: string): number {
  if (i + word.length > e) return -1;
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word.charCodeAt(k)) return -1;
  return i + word.length;
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
  const negative = b[i] === MINUS;
  if (negative && ++i >= e) return -1;
  let c = b[i]!;
  let m = 0;
  let digits = 0;
  if (c === ZERO) c = b[++i]!;
  else if (c > ZERO && c <= NINE) {
    while (i < e && isDigit((c = b[i]!))) {
      m = m * 10 + (c - ZERO);
      digits++;
      i++;
    }
  } else return -1;
  const integerDigits = digits;
  let frac = 0;
  if (i < e && c === DOT) {
    i++;
    if (i >= e || !isDigit(b[i]!)) return -1;
    while (i < e && isDigit((c = b[i]!))) {
      m = m * 10 + (c - ZERO);
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
    if (i < e && (b[i] === PLUS || b[i] === MINUS)) sign = b[i++] === MINUS ? -1 : 1;
    if (i >= e || !isDigit(b[i]!)) return -1;
    while (i < e && isDigit((c = b[i]!))) {
      // Past this the exponent is not kept exactly: `numberValueEnd` leaves the value to Number().
      if (exp < 100_000) exp = exp * 10 + (c - ZERO);
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
