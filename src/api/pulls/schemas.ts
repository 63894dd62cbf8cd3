import { idSchema } from '../../ids.js';
import { SLUG_MAX, SLUG_PATTERN } from '../../catalog/collection-slug.js';
import { RECORDS_PATH_PATTERN } from '../../pull/formats/json.js';
import type { JsonSchema } from '../http/route.js';
import { object, text } from '../http/schemas.js';

/** Request schemas of pulls, and the pieces checks share (spec api-2, Pulls and Checks). */

export const FETCH_STATUSES = ['active', 'paused', 'disabled'] as const;

export const slug: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: SLUG_MAX,
  pattern: SLUG_PATTERN,
  errorHint: `must be 1 to ${SLUG_MAX} characters: lowercase letters, digits, "-" and "_", starting with a letter or digit`,
};
const nullableSlug: JsonSchema = {
  ...slug,
  type: ['string', 'null'],
  errorHint: `${slug.errorHint as string}, or null to derive it from the name`,
};

/** The fields pulls and checks share, for create (with the required ones) and update. */
export const sharedFields: Record<string, JsonSchema> = {
  name: text(2, 128),
  endpoint_url: text(1, 2048),
  method: { enum: ['get', 'post'] },
  headers: {
    type: ['object', 'null'],
    additionalProperties: { type: ['string', 'null'], errorHint: 'must be a string value, or null' },
    errorHint: 'must be an object of header names to string values (null removes a header on update), or null',
  },
  request_body: {
    type: ['string', 'null'],
    maxLength: 65536,
    errorHint: 'must be a string of at most 65536 characters, or null',
  },
  schedule_cron: text(1, 128),
};

const pullFields: Record<string, JsonSchema> = {
  ...sharedFields,
  collection_slug: nullableSlug,
  json_records_path: {
    type: ['string', 'null'],
    minLength: 1,
    maxLength: 256,
    pattern: RECORDS_PATH_PATTERN,
    errorHint: 'must be dot-joined object keys (e.g. "data.items"; no array indexes or wildcards), or null',
  },
};

const readOnly = (why: string): JsonSchema => ({ not: {}, errorHint: why });

export const pullCreateBody = object({ ...pullFields, source_id: { ...idSchema('source'), minLength: 1 } }, [
  'name',
  'source_id',
  'endpoint_url',
]);

export const pullUpdateBody = object({
  ...pullFields,
  // Named so the answer says why rather than "unknown field".
  source_id: readOnly('cannot be changed after create; create a new pull for another source'),
  status: readOnly('is changed with POST …/pause and …/resume'),
});

export const fetchListFilters = {
  status: { enum: [...FETCH_STATUSES] },
  source_id: idSchema('source'),
};
