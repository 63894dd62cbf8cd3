import { ApiError, invalidField, notFound, type FieldIssue } from '../../errors.js';
import type { ProjectRecord } from '../../catalog/records.js';
import type { Services } from '../../services.js';
import { validateOutputSchema } from '../../transform/output-schema.js';
import type { OutputField, ViewRecord } from '../../transform/view-records.js';
import { checkScript } from '../../transform/script-check.js';
import { assertValid } from '../../http/validation.js';

/** Checks of view requests that a JSON Schema cannot express, each answering 400/404 naming the field. */

/**
 * A view of `project`, or 404; one scheduled for deletion answers 404 with a restore hint unless
 * `allowScheduled`; a view of another project of the team says so (`field` names the body field).
 */
export function requireView(
  s: Pick<Services, 'views'>,
  project: ProjectRecord,
  id: string,
  opts: { allowScheduled?: boolean; field?: string } = {},
): ViewRecord {
  const v = s.views.byId(id);
  const details = opts.field ? { details: [{ field: opts.field, message: 'is not a view of this project' }] } : {};
  if (!v || v.team_id !== project.team_id || s.views.destroying.has(id)) {
    if (opts.field) throw new ApiError('not_found', `View ${id} not found in project ${project.id}`, details);
    throw notFound(`View ${id} in project ${project.id}`);
  }
  if (v.project_id !== project.id) {
    throw new ApiError(
      'not_found',
      `View ${id} belongs to project ${v.project_id}, not ${project.id}; views only read views of their own project`,
      details,
    );
  }
  if (v.deleted_at && !opts.allowScheduled) {
    throw new ApiError(
      'not_found',
      `View ${id} is scheduled for deletion; restore it with POST /v1/projects/${project.id}/views/${id} {"deleted_at": null}`,
      opts.field ? { details: [{ field: opts.field, message: 'is scheduled for deletion' }] } : {},
    );
  }
  return v;
}

/**
 * A transform script must hold more than whitespace and compile: a syntax error answers 400
 * `view_script_invalid` with the compiler's message, line and column in `error.details`.
 */
export function assertScript(script: string | undefined, field = 'body.transform_script'): void {
  if (script === undefined) return;
  if (script.trim() === '')
    throw invalidField(field, 'must not be only whitespace (omit it to have the script generated)');
  const r = checkScript(script);
  if (r.ok) return;
  const where = r.line !== null ? ` at line ${r.line}${r.column !== null ? `, column ${r.column}` : ''}` : '';
  throw new ApiError('view_script_invalid', `${field} does not compile${where}: ${r.message}`, {
    details: [{ field, message: r.message, line: r.line, column: r.column }],
  });
}

/** Output field names unique, types consistent, no reserved query keys (400 naming each entry). */
export function assertOutputSchema(fields: readonly OutputField[] | undefined, field = 'body.output_schema'): void {
  if (fields === undefined) return;
  assertValid(
    validateOutputSchema([...fields]).map(
      (i): FieldIssue => ({
        field: i.key ? `${field}[${i.index}].${i.key}` : `${field}[${i.index}]`,
        message: i.message,
      }),
    ),
  );
}

/** The join key must be an output field of the view it is read from. */
export function assertKeyField(view: ViewRecord, name: string, field: string, side: 'base' | 'lookup'): void {
  if (view.output_schema.some((f) => f.name === name)) return;
  const has = view.output_schema.length
    ? `its output fields are: ${view.output_schema.map((f) => f.name).join(', ')}`
    : 'its output schema is still empty';
  throw invalidField(field, `names "${name}", which is not an output field of the ${side} view ${view.id} (${has})`);
}

/** A clause alias names the lookup row inside the joined record: it may not hide a base output field. */
export function assertAliasFree(base: ViewRecord, alias: string, field: string): void {
  if (!base.output_schema.some((f) => f.name === alias)) return;
  throw invalidField(
    field,
    `"${alias}" is an output field of the base view ${base.id}; the joined record could not hold both — pick another alias`,
  );
}
