import { joinJson } from '../../json-text.js';

/**
 * JSON text that a response carries verbatim instead of re-serializing a parsed value: the `docs`
 * endpoint returns documents exactly as sent (a re-serialization would turn `1e400` into null, round
 * 30-digit integers and could reorder nothing but lose exact digits). Only build one from text
 * known to be valid JSON.
 */
export class RawJson {
  /** `text` as a string, or as UTF-8 bytes (a large answer written into one buffer: no re-encoding). */
  constructor(readonly text: string | Buffer) {}
}

/**
 * A response body's JSON text. Top-level members of the body that are `RawJson` are written as
 * their text; everything else as `JSON.stringify` writes it (member order kept).
 */
export function responseJson(body: unknown): string | Buffer {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return JSON.stringify(body) ?? 'null';
  const members = Object.entries(body as Record<string, unknown>);
  if (!members.some(([, v]) => v instanceof RawJson)) return JSON.stringify(body);
  const parts: Array<string | Buffer> = [];
  for (const [k, v] of members) {
    if (v === undefined || typeof v === 'function') continue;
    parts.push(
      `${parts.length === 0 ? '{' : ','}${JSON.stringify(k)}:`,
      v instanceof RawJson ? v.text : (JSON.stringify(v) ?? 'null'),
    );
  }
  parts.push('}');
  return joinJson(parts);
}
