import { isAscii } from 'node:buffer';

/**
 * A batch's records text (`BatchInput.recordsText`: records' JSON texts joined by U+001E) as the
 * string the sandbox parses, made where the sandbox runs.
 *
 * The string is made one byte per character whenever that is cheap and exact, because V8 keeps
 * such a string in its one-byte form: copying it into the isolate moves half the bytes, and
 * `JSON.parse` reads it a little faster. ASCII bytes are their own Latin-1 (a plain copy). Text
 * with a few non-ASCII characters — nearly every real record: a name, an emoji, a quote mark — is
 * read as Latin-1 too, and each run of non-ASCII bytes is written as the JSON escapes of the
 * characters it encodes (`é` → `\u00e9`): in valid JSON such characters stand only inside
 * strings, where the escape parses to the same string, so the script sees the same record.
 * Measured on the nested bench records (3.7 KB, 87 % holding some non-ASCII character), per
 * record: the text 8.5 µs against 9.5 for the UTF-8 decode, parsing it 14.3 against 15.8 µs, and
 * half the bytes copied into the isolate. Anything this cannot do exactly — invalid UTF-8,
 * a byte order mark, a non-ASCII character right after a backslash, text that is mostly
 * non-ASCII (escapes would make it longer than two bytes per character) — is decoded as UTF-8.
 */
export function recordsTextOf(text: string | Uint8Array): string {
  if (typeof text === 'string') return text;
  const latin1 = Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString('latin1');
  if (isAscii(text)) return latin1;
  return escapedNonAscii(latin1) ?? UTF8.decode(text);
}

const UTF8 = new TextDecoder();

/** A run of non-ASCII bytes, read as Latin-1 characters. */
const NON_ASCII_RUN = /[\x80-\xff]+/g;

/** Thrown out of `String#replace` when the escaped form would not be exact (or not worth it). */
const GIVE_UP = new Error('records text: decode as UTF-8');

/** Escaping stops paying once this share of the bytes is non-ASCII. */
const MAX_NON_ASCII_SHARE = 1 / 8;

/**
 * `latin1` (UTF-8 bytes read one per character) with each run of non-ASCII bytes replaced by the
 * `\uXXXX` escapes of the UTF-16 units it decodes to; null when that would not be exact.
 */
function escapedNonAscii(latin1: string): string | null {
  // A byte order mark (EF BB BF) at the start is dropped by the UTF-8 decoder, not escaped.
  if (latin1.charCodeAt(0) === 0xef) return null;
  let budget = latin1.length * MAX_NON_ASCII_SHARE;
  try {
    return latin1.replace(NON_ASCII_RUN, (run: string, at: number) => {
      budget -= run.length;
      // After a backslash the escape would change what the backslash escapes.
      if (budget < 0 || (at > 0 && latin1.charCodeAt(at - 1) === 0x5c)) throw GIVE_UP;
      return escapeUtf8Run(run);
    });
  } catch (err) {
    if (err === GIVE_UP) return null;
    throw err;
  }
}

const HEX = '0123456789abcdef';

function escapeUnit(u: number): string {
  return '\\u' + HEX[(u >> 12) & 15]! + HEX[(u >> 8) & 15]! + HEX[(u >> 4) & 15]! + HEX[u & 15]!;
}

/**
 * The escapes of the characters a run of UTF-8 bytes (as Latin-1 characters, all ≥ 0x80) encodes;
 * throws GIVE_UP on any sequence that is not well-formed UTF-8 (the decoder would substitute U+FFFD
 * by its own rules: left to it).
 */
function escapeUtf8Run(run: string): string {
  let out = '';
  const n = run.length;
  for (let i = 0; i < n; ) {
    const b0 = run.charCodeAt(i);
    let cp: number;
    let len: number;
    let min: number;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      len = 2;
      cp = b0 & 0x1f;
      min = 0x80;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      len = 3;
      cp = b0 & 0x0f;
      min = 0x800;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      len = 4;
      cp = b0 & 0x07;
      min = 0x10000;
    } else throw GIVE_UP;
    if (i + len > n) throw GIVE_UP;
    for (let k = 1; k < len; k++) {
      const b = run.charCodeAt(i + k);
      if ((b & 0xc0) !== 0x80) throw GIVE_UP;
      cp = (cp << 6) | (b & 0x3f);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not well-formed.
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw GIVE_UP;
    if (cp >= 0x10000) {
      const c = cp - 0x10000;
      out += escapeUnit(0xd800 | (c >> 10)) + escapeUnit(0xdc00 | (c & 0x3ff));
    } else out += escapeUnit(cp);
    i += len;
  }
  return out;
}
