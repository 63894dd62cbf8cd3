import type { JsonSchema } from './json-schema.js';
import { pathIdSchema, type IdKind } from '../ids.js';

/** Shared JSON Schema pieces for route declarations. */

export const isoDateString: JsonSchema = {
  type: 'string',
  format: 'date-time',
  errorHint: 'must be an ISO 8601 date-time, e.g. 2026-01-31T12:00:00Z',
};

export function text(min: number, max: number): JsonSchema {
  return {
    type: 'string',
    minLength: min,
    maxLength: max,
    errorHint: `must be a string of ${min} to ${max} characters`,
  };
}

export function integer(min: number, max: number): JsonSchema {
  return { type: 'integer', minimum: min, maximum: max, errorHint: `must be an integer from ${min} to ${max}` };
}

/** A closed object: unknown fields are rejected and named in error.details. */
export function object(properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema {
  return { type: 'object', additionalProperties: false, properties, ...(required.length ? { required } : {}) };
}

/**
 * Path parameters, each naming a resource of the given kind. A value that is not an id of that
 * kind answers 404 `not_found`, as an id that does not exist does (`pathIdSchema`).
 */
export function params(ids: Record<string, IdKind>): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const [name, kind] of Object.entries(ids)) properties[name] = pathIdSchema(kind);
  return { type: 'object', properties, required: Object.keys(ids) };
}

/** `deleted_at: null` restores a scheduled deletion; no other value may be sent. */
export const restoreOnly: JsonSchema = { type: 'null', errorHint: 'can only be null (restores a scheduled deletion)' };
