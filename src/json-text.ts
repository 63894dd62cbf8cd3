/** Pieces of JSON text end to end: one string when every piece is one, else one buffer of their UTF-8 bytes. */
export function joinJson(parts: ReadonlyArray<string | Buffer>): string | Buffer {
  if (parts.every((p) => typeof p === 'string')) return (parts as string[]).join('');
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
}
