/**
 * Stored records of pulls and checks (spec api-2: Pull, Check). Both are "scheduled fetches": the
 * request they send, the schedule and the health fields are the same; each adds its own fields.
 */

export type FetchMethod = 'get' | 'post';
export type FetchStatus = 'active' | 'paused' | 'disabled';
/** `parse` and `ingest` happen only to pulls (a check never parses nor stores a body). */
export type ErrorStage = 'request' | 'response' | 'parse' | 'ingest';

/** A header as stored: the name as sent, the value sealed (secret-box.ts); never returned. */
export interface StoredHeader {
  name: string;
  sealed: string;
}

/** What one request sends: the part of the configuration a run snapshots when it starts (rule 10). */
export interface RequestConfig {
  endpoint_url: string;
  method: FetchMethod;
  headers: StoredHeader[];
  request_body: string | null;
}

/** One hour of results: `[hour start (epoch ms), a, b, c]`; pulls: records, fetches, failures; checks: up, down, 0. */
export type HourlyCell = [number, number, number, number];

export interface ScheduledFetchRecord extends RequestConfig {
  id: string;
  team_id: string;
  project_id: string;
  name: string;
  source_id: string;
  collection_slug: string;
  schedule_cron: string;
  status: FetchStatus;
  missed_slot_count: number;
  last_attempt_at: string | null;
  last_success_at: string | null;
  last_failure_at: string | null;
  consecutive_failure_count: number;
  /** When the current failure streak began (attention items' `since`); null while healthy. */
  failing_since: string | null;
  last_error: string | null;
  last_error_stage: ErrorStage | null;
  last_http_status: number | null;
  last_response_time_ms: number | null;
  /** The last 24 hours, oldest first, only hours with something in them. */
  hourly: HourlyCell[];
  created_at: string;
  updated_at: string;
}

/** What the last good answer said, for conditional requests; cleared when the request changes. */
export interface Validators {
  etag: string | null;
  last_modified: string | null;
}

/** One discovered target (HTTP service discovery), as last read successfully. */
export interface DiscoveredTarget {
  target: string;
  labels: Record<string, string>;
}

export interface PullRecord extends ScheduledFetchRecord {
  json_records_path: string | null;
  last_record_count: number;
  validators: Validators | null;
  /** The last service-discovery target list read in full; kept across restarts (used when a re-read fails). */
  discovered_targets: DiscoveredTarget[] | null;
  /** When the service disabled the pull after a failure streak; null otherwise. */
  disabled_at: string | null;
}

export interface CheckRecord extends ScheduledFetchRecord {
  check_retry_seconds: number | null;
  last_up: boolean | null;
  last_checked_at: string | null;
}

export type FetchKind = 'pull' | 'check';
