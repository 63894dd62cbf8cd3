import { idSchema } from '../../ids.js';
import { SLUG_MAX, SLUG_PATTERN } from '../../catalog/collection-slug.js';
import type { SchemaSettings } from '../../catalog/records.js';
import type { JsonSchema } from '../http/route.js';
import { filterParamSchema } from '../http/filters.js';
import { integer, isoDateString, object, restoreOnly, text } from '../http/schemas.js';

/** Bounds of `schema_opaque_paths` / `schema_tracked_paths` (the spec gives none; these are ours, documented). */
export const PATH_LIMITS = { paths: 256, segments: 32, segmentLength: 256 } as const;

/** Longest `schema_unclassified_retention_days` (the spec gives no bound; 100 years is "forever" enough). */
export const MAX_RETENTION_DAYS = 36500;

const slug: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: SLUG_MAX,
  pattern: SLUG_PATTERN,
  errorHint: `must be 1 to ${SLUG_MAX} characters of a-z, 0-9, "_" and "-", starting with a letter or digit`,
};

/** string[][]: a list of distinct object paths, one key segment per entry. */
export const pathList: JsonSchema = {
  type: 'array',
  maxItems: PATH_LIMITS.paths,
  uniqueItems: true,
  errorHint: `must be an array of at most ${PATH_LIMITS.paths} distinct paths, each an array of key segments`,
  items: {
    type: 'array',
    minItems: 1,
    maxItems: PATH_LIMITS.segments,
    errorHint: `must be a path of 1 to ${PATH_LIMITS.segments} key segments, e.g. ["payload", "items"]`,
    items: {
      type: 'string',
      minLength: 1,
      maxLength: PATH_LIMITS.segmentLength,
      errorHint: `must be a key segment of 1 to ${PATH_LIMITS.segmentLength} characters`,
    },
  },
};

const autoManual: JsonSchema = { enum: ['auto', 'manual'] };

/** Every settable schema rule with its exact range (spec: Collection update body). */
export const schemaSettingsProperties: Record<keyof SchemaSettings, JsonSchema> = {
  schema_opaque_paths: pathList,
  schema_tracked_paths: pathList,
  schema_max_depth: integer(1, 10),
  schema_nulls: autoManual,
  schema_optional_keys: autoManual,
  schema_detector: autoManual,
  schema_recurrence_gap_ms: integer(60_000, 604_800_000),
  schema_bulk_rows: integer(0, 1_000_000),
  schema_stale_after_ms: integer(3_600_000, 7_776_000_000),
  schema_identity_limit: integer(1, 4096),
  schema_candidate_pool: integer(1, 8192),
  schema_alias_pool: integer(16, 100_000),
  schema_writer_limit: integer(1, 256),
  schema_unclassified_retention_days: {
    type: ['integer', 'null'],
    minimum: 0,
    maximum: MAX_RETENTION_DAYS,
    errorHint: `must be an integer from 0 to ${MAX_RETENTION_DAYS}, or null to keep unclassified rows forever`,
  },
};

export const collectionCreateBody = object({ name: text(1, 128), slug, source_id: idSchema('source') }, [
  'name',
  'source_id',
]);

export const collectionUpdateBody = object({
  name: text(1, 128),
  expected_updated_at: isoDateString,
  ...schemaSettingsProperties,
  deleted_at: restoreOnly,
  // Named so the answer says why rather than "unknown field".
  slug: { not: {}, errorHint: 'cannot be changed: a collection slug is permanent (it is part of ingest URLs)' },
});

/** Filters of the collection list, beyond the standard list parameters. */
export const collectionListFilters = {
  source_id: idSchema('source'),
  project_id: idSchema('project'),
  deleted_at: filterParamSchema,
};

export type CollectionUpdateBody = Partial<SchemaSettings> & {
  name?: string;
  expected_updated_at?: string;
  deleted_at?: null;
};
