import type { BookSettings, Sighting } from '../../src/schema/book.js';
import { Fingerprinter } from '../../src/schema/fingerprint.js';
import type { Shape } from '../../src/schema/shape.js';

/** Shared fixtures for SchemaBook unit tests: settings, a fingerprinter, ids and sightings. */
export const HOUR = 3_600_000;
export const T0 = Date.parse('2026-01-01T00:00:00Z');
export const owner = { teamId: 'team_x', projectId: 'prj_x', collectionId: 'col_x' };

export function bookSettings(overrides: Partial<BookSettings> = {}): BookSettings {
  return {
    schema_nulls: 'auto',
    schema_optional_keys: 'auto',
    schema_recurrence_gap_ms: HOUR,
    schema_bulk_rows: 1000,
    schema_stale_after_ms: 24 * HOUR,
    schema_identity_limit: 4,
    schema_candidate_pool: 8,
    schema_alias_pool: 16,
    ...overrides,
  };
}

const fp = new Fingerprinter({ opaquePaths: [], trackedPaths: [], maxDepth: 6 });
let ids = 0;
export const newId = () => `sch_${String(++ids).padStart(20, '0')}`;

/** `rows` records of `record`'s shape seen at `atMs`. */
export function sight(record: Record<string, unknown>, rows: number, atMs: number): Sighting {
  const shape = fp.describe(record) as Shape;
  return {
    key: fp.fingerprint(record),
    hash: shape.hash,
    rows,
    firstMs: atMs,
    lastMs: atMs,
    shape,
    sample: JSON.stringify(record),
  };
}
