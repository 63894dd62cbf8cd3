/**
 * Control-plane records of views (spec: View, View transform, View version, Waiting shape) and the
 * manifests of view output files. Every value set the spec leaves "not shown" is fixed here and
 * documented in docs/views.md; the pipeline and the API both read these constants.
 */

export { OUTPUT_FIELD_TYPES, type OutputField, type OutputFieldType } from './output-schema.js';
import type { OutputField } from './output-schema.js';

/** What a view reads: a collection, another view, or a base view joined with lookup views. */
export const VIEW_MODES = ['collection', 'view', 'join'] as const;
export type ViewMode = (typeof VIEW_MODES)[number];

/** `auto`: scripts are generated for new schema versions; `manual`: written by a person. */
export const TRANSFORM_MODES = ['auto', 'manual'] as const;
export type TransformMode = (typeof TRANSFORM_MODES)[number];

/**
 * View status. `initializing`: no transform serves records yet (a script is being generated or
 * waits to be written); `active`: at least one transform produces records; `error`: the view cannot
 * produce records, `error_message` says why.
 */
export const VIEW_STATUSES = ['initializing', 'active', 'error'] as const;
export type ViewStatus = (typeof VIEW_STATUSES)[number];

/**
 * Join status of a join view. `backfilling`: base-view files written before `join_backfill_cutoff_at`
 * are being joined; `live`: new base records are joined as they arrive (the view trails its inputs);
 * `error`: joining stopped, `join_error_message` says why.
 */
export const JOIN_STATUSES = ['backfilling', 'live', 'error'] as const;
export type JoinStatus = (typeof JOIN_STATUSES)[number];

export const JOIN_TYPES = ['left', 'inner'] as const;
export type JoinType = (typeof JOIN_TYPES)[number];

/** One view joined onto a join view's base view (spec: ViewJoinClause). */
export interface ViewJoinClause {
  /** Name of the joined record inside the base record, `^[a-z][a-z0-9_]{0,63}$`, unique per view. */
  alias: string;
  lookup_view_id: string;
  /** `left` keeps base records without a match; `inner` drops them. */
  join_type: JoinType;
  /** Output field of the base view holding the key. */
  base_field: string;
  /** Output field of the lookup view holding the key. */
  lookup_field: string;
  /** The lookup record with the latest timestamp at processing time wins (the only strategy). */
  match_strategy: 'latest';
  /** Clauses run in ascending priority (ties: the order given). */
  priority: number;
}

/** Backfill progress of one join clause (spec: LookupProgress, keyed by clause alias). */
export interface LookupProgress {
  status: 'pending' | 'running' | 'completed' | 'failed';
  file_count: number;
  files_done: number;
  error: string | null;
  updated_at: string;
}

/** The view as stored: every field of the spec's View except the computed names and counts. */
export interface ViewRecord {
  id: string;
  team_id: string;
  project_id: string;
  /** Collection read from (view_mode `collection`), else null. */
  collection_id: string | null;
  /** View derived from (view_mode `view`), else null. */
  parent_view_id: string | null;
  view_mode: ViewMode;
  transform_mode: TransformMode;
  name: string;
  hint: string | null;
  output_schema: OutputField[];
  status: ViewStatus;
  error_message: string | null;
  mapping_policy_revision: number | null;
  mapping_policy_nullable_inputs: string[];
  mapping_policy_fallback_groups: string[][];
  mapping_policy_allow_drops: boolean;
  mapping_policy_output_bindings: Record<string, string[]>;
  /** Incremented by every regeneration of the view's scripts (POST .../regenerate). */
  mapping_generation: number;
  join_base_view_id: string | null;
  join_status: JoinStatus | null;
  join_backfill_cutoff_at: string | null;
  join_live_started_at: string | null;
  join_lookup_progress: Record<string, LookupProgress> | null;
  join_base_file_count: number | null;
  join_base_files_done: number | null;
  join_error_message: string | null;
  join_created_at: string | null;
  join_updated_at: string | null;
  joins: ViewJoinClause[];
  backfill_file_count: number;
  backfill_files_done: number;
  backfill_started_at: string | null;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
  /**
   * Internal: the collection whose batches feed the view — itself for a collection view, the
   * parent's root for a view of a view, the base view's root for a join view.
   */
  root_collection_id: string;
  /**
   * Internal: in `manual` mode, the transform that adopts schema versions still waiting (set by the
   * update that switches to manual, `view_transform_id`); null when no transform has a script yet.
   */
  adopting_transform_id: string | null;
}

/**
 * Transform status. `queued`: waiting for script generation (a script it already has keeps serving
 * until the generated one replaces it); `active`: its script runs; `error`: generation or the script
 * failed, `error_message` says why; `disabled`: taken out of service by a person, runs nothing.
 */
export const TRANSFORM_STATUSES = ['queued', 'active', 'error', 'disabled'] as const;
export type TransformStatus = (typeof TRANSFORM_STATUSES)[number];

/**
 * Backfill of records that existed before a script started serving. `none`: nothing to backfill
 * (no script yet); `pending`: to start; `running`; `completed`; `failed`: `backfill_error` says why.
 */
export const BACKFILL_STATUSES = ['none', 'pending', 'running', 'completed', 'failed'] as const;
export type BackfillStatus = (typeof BACKFILL_STATUSES)[number];

/** Set when a path read as empty at authoring has since carried a typed value (spec: ViewEvidenceNotice). */
export interface ViewEvidenceNotice {
  /** `L<depth>:<path>` keys of the paths concerned. */
  keys: string[];
  noticed_at: string;
}

/** Progress of one transform on one source schema version (spec: ViewTransformAssignment). */
export interface ViewTransformAssignment {
  schema_version_id: string;
  version: number;
  /** `pending`, `running`, `completed`, `failed` — the backfill states of that version. */
  status: string;
  rows: number;
}

export interface ViewTransformRecord {
  id: string;
  view_id: string;
  transform_script: string | null;
  /** First 16 hex characters of the script's SHA-256; null when there is no script. */
  script_hash: string | null;
  status: TransformStatus;
  error_message: string | null;
  tgl_retry_count: number;
  max_read_depth: number | null;
  evidence_notice: ViewEvidenceNotice | null;
  backfill_status: BackfillStatus;
  backfill_cutoff_at: string | null;
  backfill_start_at: string | null;
  backfill_started_at: string | null;
  backfill_completed_at: string | null;
  backfill_file_count: number;
  backfill_files_done: number;
  backfill_error: string | null;
  assignments: ViewTransformAssignment[];
  /**
   * Per output field: values the script returned that did not fit the field's type, stored as
   * null (docs/views.md, "Output schema"). Absent on records written before it was counted.
   */
  coercion_failures?: Record<string, number>;
  /** Output rows written by live batches (backfill not included). */
  rows_written?: number;
  /**
   * The first spool sequence of a batch that ran this transform live: collection files from before
   * it are the backfill's (docs/views.md, "Backfill"). Absent until a live batch commits with it.
   */
  live_from_seq?: number;
  /**
   * Internal: when a person last asked for generation (POST .../generate, .../regenerate). In
   * `manual` mode only such a request makes the generator write a script.
   */
  generation_requested_at?: string;
  /** Collection files the backfill has processed (manifest ids), so a restart resumes instead of starting over. */
  backfill_done_files?: string[];
  created_at: string;
  updated_at: string;
}

/** One source schema version as covered by one script (spec: View version). */
export interface ViewVersionRecord {
  id: string;
  view_id: string;
  /** Source schema version number covered. */
  version: number;
  /** Internal: the id of that schema version. */
  schema_version_id: string;
  transform_id: string;
  status: TransformStatus;
  error_message: string | null;
  evidence_notice: ViewEvidenceNotice | null;
  script_hash: string | null;
  script: string | null;
  backfill_status: BackfillStatus;
  backfill_start_at: string | null;
  backfill_started_at: string | null;
  backfill_completed_at: string | null;
  backfill_file_count: number;
  backfill_files_done: number;
  backfill_error: string | null;
  created_at: string;
  updated_at: string;
}

/** Why a shape waits (spec: Waiting shape reasons); `served` once a transform covers it. */
export const DEFERRAL_REASONS = [
  'collecting_samples',
  'awaiting_script',
  'generation_failed',
  'catching_up',
  'served',
] as const;
export type DeferralReason = (typeof DEFERRAL_REASONS)[number];

/** What a person decided about a waiting shape (POST .../deferrals/:id/decision). */
export const DEFERRAL_ACTIONS = ['assign', 'generate', 'exclude'] as const;
export type DeferralAction = (typeof DEFERRAL_ACTIONS)[number];

export interface ViewDeferralDecision {
  action: DeferralAction;
  /** The transform to serve the shape (`assign`), else null. */
  transform_id: string | null;
  /** Why the shape is excluded (`exclude`), else null. */
  reason: string | null;
  decided_at: string;
}

/** An event shape no transform serves yet (spec: Waiting shape, `object: view_shape_deferral`). */
export interface ViewDeferralRecord {
  id: string;
  view_id: string;
  full_signature: string;
  event_count: number;
  first_event_at: string | null;
  first_deferred_at: string;
  last_deferred_at: string;
  resolved_at: string | null;
  reason: DeferralReason;
  schema_version: number | null;
  created_at: string;
  episode: number;
  observation_count: string | null;
  retained_rows: number;
  first_observed_at: string | null;
  last_observed_at: string | null;
  next_action_at: string | null;
  hint_question: string | null;
  hint_reason: string | null;
  hint_paths: string[];
  hint_requested_at: string | null;
  hint_mapping_generation: number | null;
  exclusion_reason: string | null;
  excluded_at: string | null;
  transform_id: string | null;
  /** Internal: the latest decision a person made, for the pipeline to act on; null when none. */
  decision: ViewDeferralDecision | null;
}

/**
 * One Parquet file of view output, at `join(dataDir, 'views', project_id, view_id, id)`. Columns:
 * `__ts` TIMESTAMP(ms, UTC) event time, `__seq` BIGINT spool sequence of the source entry (larger =
 * newer), `__row` INTEGER row within the file, then one column per output field.
 */
export interface ViewFileManifest {
  /** File path relative to the view's directory. */
  id: string;
  view_id: string;
  first_seq: number;
  last_seq: number;
  rows: number;
  bytes: number;
  min_ts: number;
  max_ts: number;
  created_at: string;
  /** `batch`: a live batch; `backfill`: a transform's backfill; `join`: a join view's processing. */
  origin: 'batch' | 'backfill' | 'join';
}
