/**
 * Record styles: `flat` (scalars and one small object) and `arrays` (the same plus a two-element
 * array, which gets a JSON column).
 */
export type RecordStyle = 'flat' | 'arrays';

/** Bench data: ~200-byte records over 10 shapes, 10 fields each (one of them a small object). */
export function makeRecords(n: number, offset = 0, style: RecordStyle = 'flat'): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let j = 0; j < n; j++) {
    const i = j + offset;
    const s = i % 10;
    const r: Record<string, unknown> = { event: `event_${s}`, ts: 1767225600000 + i };
    for (let f = 0; f < 7; f++) r[`f${s}_${f}`] = f % 3 === 0 ? `value-${i}` : f % 3 === 1 ? i * 0.5 : (i & 1) === 0;
    r.ctx = { ip: '10.0.0.1', ua: 'bench/1.0' };
    if (style === 'arrays') r.tags = [`t${i % 5}`, i % 7];
    out.push(JSON.parse(JSON.stringify(r)) as Record<string, unknown>);
  }
  return out;
}

/** NDJSON bodies of `perBody` records each. */
export function makeNdjsonBodies(
  bodies: number,
  perBody: number,
  offset = 0,
  style: RecordStyle = 'flat',
): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let b = 0; b < bodies; b++)
    out.push(
      Buffer.from(
        makeRecords(perBody, offset + b * perBody, style)
          .map((r) => JSON.stringify(r))
          .join('\n'),
      ),
    );
  return out;
}
