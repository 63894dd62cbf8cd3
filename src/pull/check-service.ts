import { iso } from '../clock.js';
import type { ProjectRecord } from '../catalog/records.js';
import { ApiError } from '../errors.js';
import { pullRuns } from '../self-metrics/registry.js';
import type { SlotRun } from '../schedule/types.js';
import { fetchOnce, statusError, type FetchOnce } from './fetch-once.js';
import { FetchJobs, type FetchJobDeps } from './fetch-jobs.js';
import { patchHeaders } from './headers.js';
import { healthAfter } from './health.js';
import { addToHour } from './hourly.js';
import { BODY_PREVIEW_BYTES } from './pull-service.js';
import type { CheckRecord, FetchMethod } from './records.js';
import { checkCron, checkEndpoint, checkMethodBody } from './request-rules.js';
import { sleep } from './spread.js';

export const DEFAULT_CHECK_RETRY_SECONDS = 10;

export interface CheckCreateInput {
  name: string;
  source_id: string;
  collection_slug: string;
  endpoint_url: string;
  method?: FetchMethod;
  headers?: Record<string, string | null> | null;
  request_body?: string | null;
  schedule_cron?: string;
  check_retry_seconds?: number | null;
}

export type CheckUpdateInput = Partial<Omit<CheckCreateInput, 'source_id'>>;

/** Check test result (spec api-2). */
export interface CheckTestResult {
  ok: boolean;
  status: number;
  status_text: string;
  response_time_ms: number;
  byte_length: number;
  body_preview: string;
  error_stage: 'request' | 'response' | null;
  error: string | null;
}

/** The observation a run writes (spec api-2, plus timing phases, address and certificate expiry). */
export interface CheckObservation {
  check_id: string;
  check_name: string;
  checked_at: string;
  /** The scheduled minute again, as the record's event time. */
  timestamp: string;
  up: 0 | 1;
  http_status: number | null;
  response_time_ms: number | null;
  error_stage: 'request' | 'response' | null;
  error_message: string | null;
  attempts: number;
  dns_ms: number | null;
  connect_ms: number | null;
  tls_ms: number | null;
  first_byte_ms: number | null;
  download_ms: number | null;
  address: string | null;
  tls_expires_at: string | null;
}

/** A settled answer: up when 2xx, else the stage and message of what went wrong. */
function settle(a: FetchOnce): {
  up: boolean;
  status: number | null;
  stage: 'request' | 'response' | null;
  error: string | null;
} {
  if (!a.ok) return { up: false, status: null, stage: a.stage, error: a.error };
  const up = a.res.status >= 200 && a.res.status <= 299;
  return { up, status: a.res.status, stage: up ? null : 'response', error: up ? null : statusError(a.res) };
}

/** Checks: configuration rules, runs with one confirming retry, one observation per run, health. */
export class CheckService {
  readonly jobs: FetchJobs<CheckRecord>;

  constructor(readonly deps: FetchJobDeps) {
    this.jobs = new FetchJobs<CheckRecord>(deps, 'check', (record, slot) => this.run(record, slot), true);
  }

  get repo() {
    return this.jobs.repo;
  }

  async create(project: ProjectRecord, input: CheckCreateInput): Promise<CheckRecord> {
    const common = await this.jobs.newJobRecord(project, input, input.collection_slug);
    return this.jobs.create({
      ...common,
      check_retry_seconds:
        input.check_retry_seconds === undefined ? DEFAULT_CHECK_RETRY_SECONDS : input.check_retry_seconds,
      last_up: null,
      last_checked_at: null,
    });
  }

  async update(current: CheckRecord, input: CheckUpdateInput): Promise<CheckRecord> {
    const method = input.method ?? current.method;
    const body = input.request_body !== undefined ? input.request_body : current.request_body;
    checkMethodBody(method, body, input);
    if (input.schedule_cron !== undefined) checkCron(input.schedule_cron);
    const headerChange = patchHeaders(current.headers, input.headers);
    if (input.endpoint_url !== undefined && input.endpoint_url !== current.endpoint_url)
      await checkEndpoint(this.deps.outbound, input.endpoint_url);
    return this.jobs.update(current, {
      method,
      request_body: body,
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.collection_slug !== undefined ? { collection_slug: input.collection_slug } : {}),
      ...(input.endpoint_url !== undefined ? { endpoint_url: input.endpoint_url } : {}),
      ...(input.schedule_cron !== undefined ? { schedule_cron: input.schedule_cron } : {}),
      ...(input.check_retry_seconds !== undefined ? { check_retry_seconds: input.check_retry_seconds } : {}),
      ...(headerChange ? { headers: [...headerChange.keep, ...this.jobs.seal(current.id, headerChange.set)] } : {}),
    });
  }

  pause(current: CheckRecord): Promise<CheckRecord> {
    return this.jobs.pause(current);
  }

  /** A paused check restarts with its failure count at zero and `last_up`, `last_checked_at` cleared. */
  resume(current: CheckRecord): Promise<CheckRecord> {
    if (current.status === 'disabled') {
      throw new ApiError(
        'check_disabled_by_service',
        `Check ${current.id} was stopped by the service because the team is not in good standing; it restarts on its own when standing is restored`,
      );
    }
    return this.jobs.resume(current, { last_up: null, last_checked_at: null });
  }

  remove(current: CheckRecord): Promise<void> {
    return this.jobs.remove(current);
  }

  /** One request, nothing recorded. */
  async test(check: CheckRecord): Promise<CheckTestResult> {
    const a = await fetchOnce(
      this.deps.outbound,
      check,
      this.jobs.open(check.id, check.headers),
      this.deps.limits.check,
    );
    const s = settle(a);
    return {
      ok: s.up,
      status: s.status ?? 0,
      status_text: a.ok ? a.res.statusText : '',
      response_time_ms: a.elapsedMs,
      byte_length: a.ok ? a.res.body.length : 0,
      body_preview: a.ok ? a.res.body.subarray(0, BODY_PREVIEW_BYTES).toString('utf8') : '',
      error_stage: s.stage,
      error: s.error,
    };
  }

  /**
   * One scheduled run: a request; a failure waits `check_retry_seconds` and asks once more (a new
   * request: fresh connection and lookup) before it is recorded. One observation, stamped with the slot.
   */
  private async run(check: CheckRecord, slot: SlotRun): Promise<void> {
    const { clock, log, outbound, sink } = this.deps;
    const headers = this.jobs.open(check.id, check.headers);
    let answer = await fetchOnce(outbound, check, headers, this.deps.limits.check, slot.signal);
    let attempts = 1;
    const retryMs = check.check_retry_seconds === null ? null : check.check_retry_seconds * 1000;
    if (!settle(answer).up && retryMs !== null && !slot.signal.aborted) {
      // The wait gives the run's fetch slot to others (the second request takes one again).
      await this.deps.limiter.outside(() => sleep(retryMs, slot.signal));
      if (!slot.signal.aborted) {
        answer = await fetchOnce(outbound, check, headers, this.deps.limits.check, slot.signal);
        attempts = 2;
      }
    }
    // The node is stopping: a half-made run records nothing (a false "down" would be worse than a gap).
    if (slot.signal.aborted) return;
    const s = settle(answer);
    pullRuns.inc({ kind: 'check', outcome: s.up ? 'success' : 'failure' });
    const t = answer.ok ? answer.res.timings : answer.timings;
    const checkedAt = iso(slot.at);
    const observation: CheckObservation = {
      check_id: check.id,
      check_name: check.name,
      checked_at: checkedAt,
      timestamp: checkedAt,
      up: s.up ? 1 : 0,
      http_status: s.status,
      response_time_ms: answer.elapsedMs,
      error_stage: s.stage,
      error_message: s.error,
      attempts,
      dns_ms: t?.dnsMs ?? null,
      connect_ms: t?.connectMs ?? null,
      tls_ms: t?.tlsMs ?? null,
      first_byte_ms: t?.firstByteMs ?? null,
      download_ms: t?.downloadMs ?? null,
      address: answer.ok ? answer.res.address : null,
      tls_expires_at: answer.ok ? answer.res.tlsExpiresAt : null,
    };
    const written = await sink.write(
      { projectId: check.project_id, sourceId: check.source_id, collectionSlug: check.collection_slug },
      [observation as unknown as Record<string, unknown>],
      {
        producer: `check:${check.id}`,
        idempotencyKey: `check:${check.id}:${slot.at}`,
      },
    );
    // The check's own state still follows the run: a refused observation is a gap in the record, logged.
    if (!written.ok)
      log.warn(
        { check_id: check.id, code: written.code, reason: written.message },
        'check observation refused by the collection',
      );
    const at = clock.now();
    await this.repo.update(
      check.project_id,
      check.id,
      (current) => ({
        ...healthAfter(current, {
          at,
          ok: s.up,
          httpStatus: s.status,
          responseTimeMs: answer.elapsedMs,
          errorStage: s.stage,
          error: s.error,
        }),
        last_up: s.up,
        last_checked_at: checkedAt,
        hourly: addToHour(current.hourly, slot.at, at, [s.up ? 1 : 0, s.up ? 0 : 1, 0]),
      }),
      { touch: false },
    );
  }
}
