import type { Services } from '../../services.js';
import type {
  ViewDeferralRecord,
  ViewRecord,
  ViewTransformRecord,
  ViewVersionRecord,
} from '../../transform/view-records.js';
import { dependantsOf } from '../../transform/view-rules.js';

/** The view as the API shows it (spec: View, every field; names and dependants counts computed). */
export function serializeView(s: Pick<Services, 'collections' | 'metrics' | 'views'>, v: ViewRecord) {
  const siblings = s.views.list(v.project_id).filter((x) => x.deleted_at === null);
  const readers = dependantsOf(v.id, siblings);
  const viewName = (id: string | null) => (id === null ? null : (s.views.get(v.project_id, id)?.name ?? null));
  return {
    object: 'view',
    id: v.id,
    team_id: v.team_id,
    project_id: v.project_id,
    collection_id: v.collection_id,
    collection_name: v.collection_id === null ? null : (s.collections.byId(v.collection_id)?.name ?? null),
    parent_view_id: v.parent_view_id,
    parent_view_name: viewName(v.parent_view_id),
    view_mode: v.view_mode,
    transform_mode: v.transform_mode,
    name: v.name,
    hint: v.hint,
    output_schema: v.output_schema,
    status: v.status,
    error_message: v.error_message,
    waiting_shapes_count: s.views.transforms.deferrals(v.id).filter((d) => d.resolved_at === null).length,
    deleted_at: v.deleted_at,
    created_at: v.created_at,
    updated_at: v.updated_at,
    mapping_policy_revision: v.mapping_policy_revision,
    mapping_policy_nullable_inputs: v.mapping_policy_nullable_inputs,
    mapping_policy_fallback_groups: v.mapping_policy_fallback_groups,
    mapping_policy_allow_drops: v.mapping_policy_allow_drops,
    mapping_policy_output_bindings: v.mapping_policy_output_bindings,
    mapping_generation: v.mapping_generation,
    join_base_view_id: v.join_base_view_id,
    join_base_view_name: viewName(v.join_base_view_id),
    join_status: v.join_status,
    join_backfill_cutoff_at: v.join_backfill_cutoff_at,
    join_live_started_at: v.join_live_started_at,
    join_lookup_progress: v.join_lookup_progress,
    join_base_file_count: v.join_base_file_count,
    join_base_files_done: v.join_base_files_done,
    join_error_message: v.join_error_message,
    join_created_at: v.join_created_at,
    join_updated_at: v.join_updated_at,
    joins: v.joins,
    metrics_count: s.metrics.liveOfView(v).length,
    derived_views_count: readers.filter((r) => r.parent_view_id === v.id).length,
    join_views_count: readers.filter((r) => r.view_mode === 'join').length,
    transform_count: s.views.transforms.list(v.id).length,
    // Drains do not exist yet: nothing exports a view.
    drains_count: 0,
    backfill_file_count: v.backfill_file_count,
    backfill_files_done: v.backfill_files_done,
    backfill_started_at: v.backfill_started_at,
  };
}

/** Spec: View transform. */
export function serializeTransform(t: ViewTransformRecord) {
  return {
    object: 'view_transform',
    id: t.id,
    view_id: t.view_id,
    transform_script: t.transform_script,
    script_hash: t.script_hash,
    status: t.status,
    error_message: t.error_message,
    tgl_retry_count: t.tgl_retry_count,
    max_read_depth: t.max_read_depth,
    evidence_notice: t.evidence_notice,
    backfill_status: t.backfill_status,
    backfill_cutoff_at: t.backfill_cutoff_at,
    backfill_start_at: t.backfill_start_at,
    backfill_started_at: t.backfill_started_at,
    backfill_completed_at: t.backfill_completed_at,
    backfill_file_count: t.backfill_file_count,
    backfill_files_done: t.backfill_files_done,
    backfill_error: t.backfill_error,
    assignments: t.assignments,
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
}

/** Spec: View version. */
export function serializeVersion(v: ViewVersionRecord) {
  return {
    object: 'view_version',
    id: v.id,
    view_id: v.view_id,
    version: v.version,
    transform_id: v.transform_id,
    status: v.status,
    error_message: v.error_message,
    evidence_notice: v.evidence_notice,
    script_hash: v.script_hash,
    script: v.script,
    backfill_status: v.backfill_status,
    backfill_start_at: v.backfill_start_at,
    backfill_started_at: v.backfill_started_at,
    backfill_completed_at: v.backfill_completed_at,
    backfill_file_count: v.backfill_file_count,
    backfill_files_done: v.backfill_files_done,
    backfill_error: v.backfill_error,
    created_at: v.created_at,
    updated_at: v.updated_at,
  };
}

/** Spec: Waiting shape (`object: view_shape_deferral`). */
export function serializeDeferral(d: ViewDeferralRecord) {
  return {
    object: 'view_shape_deferral',
    id: d.id,
    view_id: d.view_id,
    full_signature: d.full_signature,
    event_count: d.event_count,
    first_event_at: d.first_event_at,
    first_deferred_at: d.first_deferred_at,
    last_deferred_at: d.last_deferred_at,
    resolved_at: d.resolved_at,
    reason: d.reason,
    schema_version: d.schema_version,
    created_at: d.created_at,
    episode: d.episode,
    observation_count: d.observation_count,
    retained_rows: d.retained_rows,
    first_observed_at: d.first_observed_at,
    last_observed_at: d.last_observed_at,
    next_action_at: d.next_action_at,
    hint_question: d.hint_question,
    hint_reason: d.hint_reason,
    hint_paths: d.hint_paths,
    hint_requested_at: d.hint_requested_at,
    hint_mapping_generation: d.hint_mapping_generation,
    exclusion_reason: d.exclusion_reason,
    excluded_at: d.excluded_at,
    transform_id: d.transform_id,
  };
}

/** Spec: Waiting shape hint — the question the service asks a person about a shape. */
export function serializeHint(d: ViewDeferralRecord) {
  return {
    object: 'view_shape_hint',
    question: d.hint_question,
    reason: d.hint_reason,
    paths: d.hint_paths,
    requested_at: d.hint_requested_at,
    mapping_generation: d.hint_mapping_generation,
    view_id: d.view_id,
    deferral_id: d.id,
    episode: d.episode,
    transform_id: d.transform_id,
  };
}
