import { hourlyWindow } from '../../pull/hourly.js';
import type { CheckRecord, PullRecord, ScheduledFetchRecord } from '../../pull/records.js';
import type { Services } from '../../services.js';
import type { FetchJobs } from '../../pull/fetch-jobs.js';

/** The fields pulls and checks show alike. */
function common<T extends ScheduledFetchRecord>(s: Pick<Services, 'sources'>, jobs: FetchJobs<T>, x: T) {
  return {
    id: x.id,
    project_id: x.project_id,
    team_id: x.team_id,
    name: x.name,
    source_id: x.source_id,
    source_name: s.sources.get(x.project_id, x.source_id)?.name ?? null,
    collection_slug: x.collection_slug,
    endpoint_url: x.endpoint_url,
    method: x.method,
    // Names only: values are sealed at rest and never returned (spec).
    headers_configured: x.headers.map((h) => h.name),
    request_body: x.request_body,
    schedule_cron: x.schedule_cron,
    status: x.status,
    next_fetch_at: jobs.nextFetchAt(x),
    missed_slot_count: x.missed_slot_count,
  };
}

/** Pull (spec api-2); `records_pulled_hourly`: 24 × `{ hour, records, fetches, failures }`, oldest first. */
export function serializePull(s: Pick<Services, 'clock' | 'pulls' | 'sources'>, x: PullRecord) {
  return {
    object: 'pull',
    ...common(s, s.pulls.jobs, x),
    json_records_path: x.json_records_path,
    last_attempt_at: x.last_attempt_at,
    last_success_at: x.last_success_at,
    last_failure_at: x.last_failure_at,
    consecutive_failure_count: x.consecutive_failure_count,
    last_error: x.last_error,
    last_error_stage: x.last_error_stage,
    last_http_status: x.last_http_status,
    last_response_time_ms: x.last_response_time_ms,
    last_record_count: x.last_record_count,
    records_pulled_hourly: hourlyWindow(x.hourly, s.clock.now(), (hour, c) => ({
      hour,
      records: c?.[1] ?? 0,
      fetches: c?.[2] ?? 0,
      failures: c?.[3] ?? 0,
    })),
    created_at: x.created_at,
    updated_at: x.updated_at,
  };
}

/** Check (spec api-2); `results_hourly`: 24 × `{ hour, up, down }`, oldest first. */
export function serializeCheck(s: Pick<Services, 'checks' | 'clock' | 'sources'>, x: CheckRecord) {
  return {
    object: 'check',
    ...common(s, s.checks.jobs, x),
    check_retry_seconds: x.check_retry_seconds,
    last_up: x.last_up,
    results_hourly: hourlyWindow(x.hourly, s.clock.now(), (hour, c) => ({ hour, up: c?.[1] ?? 0, down: c?.[2] ?? 0 })),
    last_checked_at: x.last_checked_at,
    last_success_at: x.last_success_at,
    last_failure_at: x.last_failure_at,
    consecutive_failure_count: x.consecutive_failure_count,
    last_error: x.last_error,
    last_error_stage: x.last_error_stage as CheckRecord['last_error_stage'],
    last_http_status: x.last_http_status,
    last_response_time_ms: x.last_response_time_ms,
    created_at: x.created_at,
    updated_at: x.updated_at,
  };
}
