import { invalidField } from '../errors.js';

/** Spec limit: at most 20 headers per pull or check, counted after a patch is applied. */
export const MAX_HEADERS = 20;
export const MAX_HEADER_VALUE = 8192;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$/;
/** Set by the client itself (framing, connection, conditional requests of pulls); a user value would break the request. */
const RESERVED = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'upgrade',
  'proxy-connection',
]);

/** Plain headers in the order they are sent: the spelling sent by the user is kept (rule 6). */
export type HeaderList = Array<{ name: string; value: string }>;

function checkEntry(name: string, value: unknown): void {
  const field = `body.headers.${name}`;
  if (!TOKEN.test(name))
    throw invalidField(field, "is not a valid header name: use 1 to 256 letters, digits and !#$%&'*+-.^_`|~");
  if (RESERVED.has(name.toLowerCase())) throw invalidField(field, 'is set by Sluice itself and cannot be configured');
  if (value === null) return;
  if (typeof value !== 'string') throw invalidField(field, 'must be a string value (or null)');
  if (value.length > MAX_HEADER_VALUE) throw invalidField(field, `must be at most ${MAX_HEADER_VALUE} characters`);
  if (/[\r\n\0]/.test(value)) throw invalidField(field, 'must not contain line breaks or NUL characters');
}

function checkCount(list: HeaderList): HeaderList {
  if (list.length > MAX_HEADERS)
    throw invalidField('body.headers', `must hold at most ${MAX_HEADERS} headers (after the change: ${list.length})`);
  return list;
}

/**
 * Create (rule 6): a `null` value is ignored; two spellings of one name (case-insensitive) store one
 * header, the later one in the object winning with its spelling.
 */
export function headersForCreate(input: Record<string, unknown> | null | undefined): HeaderList {
  const out: HeaderList = [];
  if (!input) return out;
  for (const [name, value] of Object.entries(input)) {
    checkEntry(name, value);
    const i = out.findIndex((h) => h.name.toLowerCase() === name.toLowerCase());
    if (value === null) continue;
    if (i >= 0) out.splice(i, 1);
    out.push({ name, value: value as string });
  }
  return checkCount(out);
}

/**
 * Update (rule 6) as a patch over `current`: a string adds or replaces (the spelling sent replaces the
 * stored one), `null` removes, unmentioned names keep their value; `undefined` (the field omitted)
 * keeps all, `null` instead of the object removes all. Values of kept headers are not read here: the
 * result names which current entries stay (`keep`) and the new plain values (`set`).
 */
export function patchHeaders<H extends { name: string }>(
  current: H[],
  patch: Record<string, unknown> | null | undefined,
): { keep: H[]; set: HeaderList } | null {
  if (patch === undefined) return null;
  if (patch === null) return { keep: [], set: [] };
  let keep = [...current];
  const set: HeaderList = [];
  for (const [name, value] of Object.entries(patch)) {
    checkEntry(name, value);
    const lower = name.toLowerCase();
    keep = keep.filter((h) => h.name.toLowerCase() !== lower);
    const i = set.findIndex((h) => h.name.toLowerCase() === lower);
    if (i >= 0) set.splice(i, 1);
    if (value !== null) set.push({ name, value: value as string });
  }
  if (keep.length + set.length > MAX_HEADERS) {
    throw invalidField(
      'body.headers',
      `must leave at most ${MAX_HEADERS} headers after the patch is applied (it would leave ${keep.length + set.length})`,
    );
  }
  return { keep, set };
}
