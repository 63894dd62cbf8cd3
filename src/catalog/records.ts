/** Control-plane records of the data side: projects, sources, ingest keys, collections. */

export interface ProjectRecord {
  id: string;
  team_id: string;
  name: string;
  start_at: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  late_data_window_minutes: number;
  queued_server_count: number | null;
}

export interface SourceRecord {
  id: string;
  team_id: string;
  project_id: string;
  name: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export const INGEST_KEY_STATUSES = ['active', 'revoked', 'disabled'] as const;
export type IngestKeyStatus = (typeof INGEST_KEY_STATUSES)[number];

/** An ingest key. Only the hash of its secret is stored; the secret is shown once, at creation. */
export interface IngestKeyRecord {
  id: string;
  team_id: string;
  project_id: string;
  source_id: string;
  secret_hash: string;
  last4: string;
  status: IngestKeyStatus;
  created_at: string;
}

export type AutoManual = 'auto' | 'manual';

/** The schema rules of a collection (spec: Collection, every `schema_*` field). */
export interface SchemaSettings {
  schema_opaque_paths: string[][];
  schema_tracked_paths: string[][];
  schema_max_depth: number;
  schema_nulls: AutoManual;
  schema_optional_keys: AutoManual;
  schema_detector: AutoManual;
  schema_recurrence_gap_ms: number;
  schema_bulk_rows: number;
  schema_stale_after_ms: number;
  schema_identity_limit: number;
  schema_candidate_pool: number;
  schema_alias_pool: number;
  schema_writer_limit: number;
  schema_unclassified_retention_days: number | null;
}

export interface CollectionRecord extends SchemaSettings {
  id: string;
  team_id: string;
  project_id: string;
  source_id: string;
  slug: string;
  name: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}
