import { ApiError, invalidField } from '../errors.js';
import { newId } from '../ids.js';
import type { ProjectRecord } from '../catalog/records.js';
import type { OutputField, TransformMode, ViewRecord, ViewTransformRecord } from './view-records.js';

/** How view records are built and how the update rules of their fields apply (no I/O). */

/** `mapping_policy` of a create or update body; omitted parts keep their value (create: empty). */
export interface MappingPolicyInput {
  nullable_inputs?: string[];
  fallback_groups?: string[][];
  output_bindings?: Record<string, string[]>;
  allow_drops?: boolean;
}

/** A new view record with every field at its initial value. */
export function newView(
  project: ProjectRecord,
  now: string,
  f: { name: string; root: string; mode: TransformMode; hint: string | null; output: OutputField[] },
): ViewRecord {
  return {
    id: newId('view'),
    team_id: project.team_id,
    project_id: project.id,
    collection_id: null,
    parent_view_id: null,
    view_mode: 'collection',
    transform_mode: f.mode,
    name: f.name,
    hint: f.hint,
    output_schema: f.output,
    status: 'initializing',
    error_message: null,
    mapping_policy_revision: null,
    mapping_policy_nullable_inputs: [],
    mapping_policy_fallback_groups: [],
    mapping_policy_allow_drops: false,
    mapping_policy_output_bindings: {},
    mapping_generation: 0,
    join_base_view_id: null,
    join_status: null,
    join_backfill_cutoff_at: null,
    join_live_started_at: null,
    join_lookup_progress: null,
    join_base_file_count: null,
    join_base_files_done: null,
    join_error_message: null,
    join_created_at: null,
    join_updated_at: null,
    joins: [],
    backfill_file_count: 0,
    backfill_files_done: 0,
    backfill_started_at: null,
    deleted_at: null,
    created_at: now,
    updated_at: now,
    root_collection_id: f.root,
    adopting_transform_id: null,
  };
}

/** The mapping_policy_* fields after applying `p` (omitted parts keep their value); the revision moves on. */
export function policyFields(cur: ViewRecord, p: MappingPolicyInput): Partial<ViewRecord> {
  return {
    mapping_policy_revision: (cur.mapping_policy_revision ?? 0) + 1,
    mapping_policy_nullable_inputs: p.nullable_inputs ?? cur.mapping_policy_nullable_inputs,
    mapping_policy_fallback_groups: p.fallback_groups ?? cur.mapping_policy_fallback_groups,
    mapping_policy_output_bindings: p.output_bindings ?? cur.mapping_policy_output_bindings,
    mapping_policy_allow_drops: p.allow_drops ?? cur.mapping_policy_allow_drops,
  };
}

/** Output bindings name output fields; checked once the view declares any (400 naming the key). */
export function assertBindings(view: ViewRecord): void {
  if (view.output_schema.length === 0) return;
  const names = new Set(view.output_schema.map((f) => f.name));
  for (const key of Object.keys(view.mapping_policy_output_bindings)) {
    if (!names.has(key))
      throw invalidField(
        `body.mapping_policy.output_bindings.${key}`,
        `names no output field of the view (output_schema has: ${[...names].join(', ')})`,
      );
  }
}

/**
 * The transform adopting schema versions still waiting in manual mode (spec: `view_transform_id`),
 * after an update to `mode` naming `named` (or not). Named: it must be a transform of the view
 * with a script, not disabled. Switching to manual without one: required when the view runs more
 * than one distinct script; with one, that script's oldest transform; with none, the oldest
 * transform not disabled (it adopts once it has a script). Auto: none.
 */
export function adoptingTransform(
  cur: ViewRecord,
  mode: TransformMode,
  named: string | undefined,
  transforms: readonly ViewTransformRecord[],
): string | null {
  const serving = transforms
    .filter((t) => t.transform_script !== null && t.status !== 'disabled')
    .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
  if (named !== undefined) {
    if (mode !== 'manual')
      throw invalidField(
        'body.view_transform_id',
        'is only accepted with transform_mode manual (it names the transform adopting waiting schema versions)',
      );
    const t = transforms.find((x) => x.id === named);
    if (!t) throw invalidField('body.view_transform_id', `is not a transform of view ${cur.id}`);
    if (!serving.includes(t)) {
      throw new ApiError(
        'conflict',
        `Transform ${t.id} ${t.status === 'disabled' ? 'is disabled' : 'has no script yet'}; only a transform with a script can adopt waiting schema versions`,
        {
          details: [{ field: 'body.view_transform_id', message: 'has no script or is disabled' }],
        },
      );
    }
    return t.id;
  }
  if (mode === 'auto') return null;
  if (cur.transform_mode === 'manual') return cur.adopting_transform_id;
  const distinct = new Map<string, ViewTransformRecord>();
  for (const t of serving) if (!distinct.has(t.script_hash!)) distinct.set(t.script_hash!, t);
  if (distinct.size > 1) {
    const ids = [...distinct.values()].map((t) => t.id).join(', ');
    throw invalidField(
      'body.view_transform_id',
      `is required when switching to manual: the view runs ${distinct.size} distinct scripts (${ids}); name the transform that adopts schema versions still waiting`,
    );
  }
  return [...distinct.values()][0]?.id ?? transforms.find((t) => t.status !== 'disabled')?.id ?? null;
}
