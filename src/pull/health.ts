import { iso } from '../clock.js';
import type { ErrorStage, RequestConfig, ScheduledFetchRecord } from './records.js';

/** How one run ended, as the health fields record it. */
export interface RunOutcome {
  /** When the run's (last) request was made, epoch ms. */
  at: number;
  ok: boolean;
  httpStatus: number | null;
  responseTimeMs: number | null;
  errorStage: ErrorStage | null;
  /** On failure, what went wrong; on a success, a note (a partial service-discovery run), else null. */
  error: string | null;
}

/**
 * The health fields after a run (spec api-2, Pull and Check): the last attempt, success and failure
 * times, the failure streak (reset by a success), the last error and its stage (cleared by a success
 * unless it carries a note), the last status and response time.
 */
export function healthAfter(current: ScheduledFetchRecord, o: RunOutcome): Partial<ScheduledFetchRecord> {
  const at = iso(o.at);
  return {
    last_attempt_at: at,
    ...(o.ok
      ? { last_success_at: at, consecutive_failure_count: 0, failing_since: null }
      : {
          last_failure_at: at,
          consecutive_failure_count: current.consecutive_failure_count + 1,
          failing_since: current.failing_since ?? at,
        }),
    last_error: o.error,
    last_error_stage: o.errorStage,
    last_http_status: o.httpStatus,
    last_response_time_ms: o.responseTimeMs,
  };
}

/** Whether two records send the same request (a validator or target list learnt under one is valid for the other). */
export function sameRequest(a: RequestConfig, b: RequestConfig): boolean {
  return (
    a.endpoint_url === b.endpoint_url &&
    a.method === b.method &&
    a.request_body === b.request_body &&
    a.headers.length === b.headers.length &&
    a.headers.every((h, i) => h.name === b.headers[i]!.name && h.sealed === b.headers[i]!.sealed)
  );
}
