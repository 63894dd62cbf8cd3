import { TIME_RANGES } from '../../rollup/metric-records.js';
import { PAGE_VISIBILITIES } from '../../catalog/pages.js';
import type { JsonSchema } from '../http/route.js';
import { isoDateString, object, text } from '../http/schemas.js';

/** A page slug: lowercase letters, digits and single hyphens, 1 to 64 characters, no hyphen at either end. */
export const SLUG_PATTERN = '^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,63}$';

const slug: JsonSchema = {
  type: 'string',
  maxLength: 64,
  pattern: SLUG_PATTERN,
  errorHint: 'must be 1 to 64 lowercase letters, digits or single hyphens, not starting or ending with a hyphen',
};
const nullableDate: JsonSchema = {
  anyOf: [isoDateString, { type: 'null' }],
  errorHint: 'must be an ISO 8601 date-time or null',
};

const fields: Record<string, JsonSchema> = {
  name: text(1, 128),
  slug,
  description: {
    type: ['string', 'null'],
    maxLength: 1024,
    errorHint: 'must be a string of at most 1024 characters, or null',
  },
  visibility: { enum: [...PAGE_VISIBILITIES] },
  time_range: { enum: [...TIME_RANGES] },
  custom_range_start_at: nullableDate,
  custom_range_end_at: nullableDate,
  timezone: {
    type: 'string',
    minLength: 1,
    maxLength: 64,
    errorHint: 'must be an IANA time zone name, e.g. Europe/Berlin or UTC',
  },
};

/** POST /v1/projects/:project_id/pages (docs/pages.md). */
export const pageCreateBody = object(fields, ['name']);
/** POST …/pages/:page_id: any field of create, at least one. */
export const pageUpdateBody = object(fields);

export interface PageBody {
  name?: string;
  slug?: string;
  description?: string | null;
  visibility?: (typeof PAGE_VISIBILITIES)[number];
  time_range?: (typeof TIME_RANGES)[number];
  custom_range_start_at?: string | null;
  custom_range_end_at?: string | null;
  timezone?: string;
}
