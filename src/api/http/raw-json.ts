/**
 * JSON text that a response carries verbatim instead of re-serializing a parsed value: the `docs`
 * endpoint returns documents exactly as sent (a re-serialization would turn `1e400` into null, round
 * 30-digit integers and could reorder nothing but lose exact digits). Only build one from text
 * known to be valid JSON.
 */
export class RawJson {
  constructor(readonly text: string) {}
}

/**
 * A response body's JSON text. Top-level members of the body that are `RawJson` are written as
 * their text; everything else as `JSON.stringify` writes it (member order kept).
 */
export function responseJson(body: unknown): string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return JSON.stringify(body) ?? 'null';
  const members = Object.entries(body as Record<string, unknown>);
  if (!members.some(([, v]) => v instanceof RawJson)) return JSON.stringify(body);
  const parts: string[] = [];
  for (const [k, v] of members) {
    if (v === undefined || typeof v === 'function') continue;
    parts.push(`${JSON.stringify(k)}:${v instanceof RawJson ? v.text : (JSON.stringify(v) ?? 'null')}`);
  }
  return `{${parts.join(',')}}`;
}
