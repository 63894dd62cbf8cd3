import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ApiError, type FieldIssue } from '../errors.js';
import type { JsonSchema } from './json-schema.js';

// ajv-formats ships CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    strict: true,
    verbose: true,
    coerceTypes: coerce,
    useDefaults: coerce,
    allowUnionTypes: true,
  });
  addFormats(ajv);
  // A sentence that replaces ajv's generic message for this schema node ("must be a project id: …").
  ajv.addKeyword({ keyword: 'errorHint', schemaType: 'string' });
  // The kind of id a path parameter names (ids.ts `pathIdSchema`); checked by dispatch, not by ajv.
  ajv.addKeyword({ keyword: 'pathId', schemaType: 'string' });
  return ajv;
}

// Query strings and path parameters are text: they are coerced to the declared types; bodies are not.
const textAjv = makeAjv(true);
const jsonAjv = makeAjv(false);

export type Location = 'params' | 'query' | 'body';

export type Validator = (value: unknown) => FieldIssue[];

/** Compile a schema once; the returned function lists every problem with its field path. */
export function compileValidator(location: Location, schema: JsonSchema): Validator {
  const fn: ValidateFunction = (location === 'body' ? jsonAjv : textAjv).compile(schema);
  return (value) => (fn(value) ? [] : toIssues(location, fn.errors ?? []));
}

function toIssues(location: Location, errors: ErrorObject[]): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    const base =
      location +
      e.instancePath.replace(/\/([^/]*)/g, (_m, seg: string) => (/^\d+$/.test(seg) ? `[${seg}]` : `.${seg}`));
    let field = base;
    let message: string;
    const hint = (e.parentSchema as { errorHint?: string } | undefined)?.errorHint;
    if (e.keyword === 'additionalProperties') {
      field = `${base}.${(e.params as { additionalProperty: string }).additionalProperty}`;
      message = 'is not a known field; remove it';
    } else if (e.keyword === 'required') {
      field = `${base}.${(e.params as { missingProperty: string }).missingProperty}`;
      message = 'is required';
    } else if (e.keyword === 'propertyNames') {
      message = `has an unknown key "${(e.params as { propertyName: string }).propertyName}"`;
    } else if (e.keyword === 'enum') {
      message = `must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    } else if (hint) {
      message = hint;
    } else {
      message = e.message ?? 'is invalid';
    }
    // anyOf/oneOf report each branch; one line per field and message is enough.
    const key = `${field}\u0000${message}`;
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if' || seen.has(key)) continue;
    seen.add(key);
    issues.push({ field, message });
  }
  return issues;
}

/** Throw the catalogue error for a list of issues (no-op when empty). */
export function assertValid(issues: FieldIssue[]): void {
  if (issues.length === 0) return;
  const summary = issues.map((i) => `${i.field} ${i.message}`).join('; ');
  throw new ApiError('request_validation_failed', `Invalid request: ${summary}`, { details: issues });
}
