import { idSchema } from '../../ids.js';
import type { JsonSchema } from '../http/route.js';
import { object } from '../http/schemas.js';
import { sharedFields, slug } from '../pulls/schemas.js';

/** Request schemas of checks (spec api-2, Checks). */

const retry: JsonSchema = {
  type: ['integer', 'null'],
  minimum: 1,
  maximum: 20,
  errorHint: 'must be an integer from 1 to 20 (seconds), or null to record the first result',
};

const checkFields: Record<string, JsonSchema> = { ...sharedFields, collection_slug: slug, check_retry_seconds: retry };

export const checkCreateBody = object({ ...checkFields, source_id: idSchema('source') }, [
  'name',
  'source_id',
  'collection_slug',
  'endpoint_url',
]);

export const checkUpdateBody = object({
  ...checkFields,
  source_id: { not: {}, errorHint: 'cannot be changed after create; create a new check for another source' },
  status: { not: {}, errorHint: 'is changed with POST …/pause and …/resume' },
});
