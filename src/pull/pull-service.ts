import { iso } from '../clock.js';
import type { ProjectRecord } from '../catalog/records.js';
import { slugFromName } from '../catalog/collection-slug.js';
import { pullRuns } from '../self-metrics/registry.js';
import type { SlotRun } from '../schedule/types.js';
import { FetchJobs, type FetchJobDeps } from './fetch-jobs.js';
import { patchHeaders } from './headers.js';
import { healthAfter, sameRequest } from './health.js';
import { addToHour } from './hourly.js';
import { fetchPull, type PullFetchResult } from './pull-fetch.js';
import type { FetchMethod, PullRecord } from './records.js';
import { checkCron, checkEndpoint, checkMethodBody } from './request-rules.js';
import type { RecordObject } from './formats/json.js';

/**
 * The service disables a pull at its 100th failure in a row, once the streak has lasted 24 hours
 * (docs/pulls-and-checks.md): a long outage of a per-minute pull is not given up in two hours, an
 * hourly pull not kept failing for four days more.
 */
export const PULL_DISABLE_AFTER_FAILURES = 100;
export const PULL_DISABLE_AFTER_MS = 24 * 3_600_000;
/** Records per sink write; a run's writes share its slot in their idempotency keys. */
export const SINK_CHUNK_RECORDS = 5_000;
/** Test results show the first 2 KB of the body (spec Limits). */
export const BODY_PREVIEW_BYTES = 2048;

export interface PullCreateInput {
  name: string;
  source_id: string;
  collection_slug?: string | null;
  endpoint_url: string;
  method?: FetchMethod;
  headers?: Record<string, string | null> | null;
  request_body?: string | null;
  json_records_path?: string | null;
  schedule_cron?: string;
}

export type PullUpdateInput = Partial<Omit<PullCreateInput, 'source_id'>>;

/** Pull test result (spec api-2). */
export interface PullTestResult {
  ok: boolean;
  status: number;
  status_text: string;
  response_time_ms: number;
  byte_length: number;
  record_count: number;
  body_preview: string;
  error_stage: PullRecord['last_error_stage'];
  error: string | null;
}

/** Pulls: configuration rules, runs (fetch → parse → sink), health, the failure-streak stop. */
export class PullService {
  readonly jobs: FetchJobs<PullRecord>;

  constructor(readonly deps: FetchJobDeps) {
    this.jobs = new FetchJobs<PullRecord>(deps, 'pull', (record, slot) => this.run(record, slot));
  }

  get repo() {
    return this.jobs.repo;
  }

  async create(project: ProjectRecord, input: PullCreateInput): Promise<PullRecord> {
    const common = await this.jobs.newJobRecord(project, input, input.collection_slug ?? slugFromName(input.name));
    return this.jobs.create({
      ...common,
      json_records_path: input.json_records_path ?? null,
      last_record_count: 0,
      validators: null,
      discovered_targets: null,
      disabled_at: null,
    });
  }

  /** Rules 5–10 on the configuration the update leaves; `collection_slug: null` derives it from the name again. */
  async update(current: PullRecord, input: PullUpdateInput): Promise<PullRecord> {
    const method = input.method ?? current.method;
    const body = input.request_body !== undefined ? input.request_body : current.request_body;
    checkMethodBody(method, body, input);
    if (input.schedule_cron !== undefined) checkCron(input.schedule_cron);
    const headerChange = patchHeaders(current.headers, input.headers);
    if (input.endpoint_url !== undefined && input.endpoint_url !== current.endpoint_url)
      await checkEndpoint(this.deps.outbound, input.endpoint_url);
    const name = input.name ?? current.name;
    const patch: Partial<PullRecord> = {
      name,
      method,
      request_body: body,
      ...(input.endpoint_url !== undefined ? { endpoint_url: input.endpoint_url } : {}),
      ...(input.schedule_cron !== undefined ? { schedule_cron: input.schedule_cron } : {}),
      ...(input.json_records_path !== undefined ? { json_records_path: input.json_records_path } : {}),
      ...(input.collection_slug !== undefined ? { collection_slug: input.collection_slug ?? slugFromName(name) } : {}),
      ...(headerChange ? { headers: [...headerChange.keep, ...this.jobs.seal(current.id, headerChange.set)] } : {}),
    };
    const next = { ...current, ...patch };
    // What the endpoint told us about another request (validators, targets) does not hold for this one.
    if (!sameRequest(current, next) || next.json_records_path !== current.json_records_path)
      Object.assign(patch, { validators: null, discovered_targets: null });
    return this.jobs.update(current, patch);
  }

  pause(current: PullRecord): Promise<PullRecord> {
    return this.jobs.pause(current);
  }

  /** Rule 11: resume also re-enables a pull the service disabled; the failure count is cleared. */
  resume(current: PullRecord): Promise<PullRecord> {
    return this.jobs.resume(current, { disabled_at: null });
  }

  remove(current: PullRecord): Promise<void> {
    return this.jobs.remove(current);
  }

  /** Fetch once (unconditionally), ingest nothing, change no health field or schedule. */
  async test(pull: PullRecord): Promise<PullTestResult> {
    const r = await fetchPull(this.deps.outbound, pull, this.jobs.open(pull.id, pull.headers), {
      conditional: false,
      limits: this.deps.limits.pull,
    });
    return {
      ok: r.ok,
      status: r.status,
      status_text: r.statusText,
      response_time_ms: r.responseTimeMs,
      byte_length: r.byteLength,
      record_count: r.ok ? r.records.length : 0,
      body_preview: r.body ? r.body.subarray(0, BODY_PREVIEW_BYTES).toString('utf8') : '',
      error_stage: r.errorStage,
      error: r.error,
    };
  }

  /** One scheduled run; `pull` is the configuration read when it started (rule 10). */
  private async run(pull: PullRecord, slot: SlotRun): Promise<void> {
    const { clock, log } = this.deps;
    const result = await fetchPull(this.deps.outbound, pull, this.jobs.open(pull.id, pull.headers), {
      conditional: true,
      limits: this.deps.limits.pull,
      signal: slot.signal,
    });
    // The node is stopping: an aborted fetch is not the endpoint's failure.
    if (slot.signal.aborted) return;
    let outcome: PullFetchResult = result;
    if (result.ok && result.records.length > 0) {
      const refusal = await this.write(pull, slot.at, result.records);
      if (refusal) outcome = { ...result, ok: false, errorStage: 'ingest', error: refusal };
    }
    pullRuns.inc({ kind: 'pull', outcome: outcome.ok ? 'success' : 'failure' });
    const at = clock.now();
    let disabled = false;
    await this.repo.update(
      pull.project_id,
      pull.id,
      (current) => {
        const health = healthAfter(current, {
          at,
          ok: outcome.ok,
          httpStatus: outcome.status || null,
          responseTimeMs: outcome.responseTimeMs,
          errorStage: outcome.errorStage,
          error: outcome.error,
        });
        const patch: Partial<PullRecord> = {
          ...health,
          hourly: addToHour(current.hourly, at, at, [outcome.ok ? outcome.records.length : 0, 1, outcome.ok ? 0 : 1]),
        };
        if (outcome.ok) {
          patch.last_record_count = outcome.records.length;
          // Only under the request they answered (an edit meanwhile cleared them).
          if (sameRequest(current, pull) && current.json_records_path === pull.json_records_path) {
            patch.validators = outcome.validators;
            if (outcome.targets) patch.discovered_targets = outcome.targets;
          }
        }
        const failures = patch.consecutive_failure_count ?? 0;
        const since = patch.failing_since ?? current.failing_since;
        if (
          !outcome.ok &&
          current.status === 'active' &&
          failures >= PULL_DISABLE_AFTER_FAILURES &&
          since &&
          at - Date.parse(since) >= PULL_DISABLE_AFTER_MS
        ) {
          patch.status = 'disabled';
          patch.disabled_at = iso(at);
          disabled = true;
        }
        return patch;
      },
      { touch: false },
    );
    if (disabled) {
      log.warn({ pull_id: pull.id, failures: PULL_DISABLE_AFTER_FAILURES }, 'pull disabled after a failure streak');
      // Not awaited: this run is the job's run in flight, which unregistering waits for.
      void this.jobs.stopJob(pull.id);
    }
  }

  /**
   * Through the record sink in chunks of at most 5,000 records, each idempotent under the slot and its
   * record range; a chunk refused for its size is halved and sent again. A refusal is the run's
   * `ingest` error, saying how many records went in before it.
   */
  private async write(pull: PullRecord, slotAt: number, records: RecordObject[]): Promise<string | null> {
    const target = { projectId: pull.project_id, sourceId: pull.source_id, collectionSlug: pull.collection_slug };
    let written = 0;
    const send = async (from: number, to: number): Promise<string | null> => {
      const out = await this.deps.sink.write(target, records.slice(from, to), {
        producer: `pull:${pull.id}`,
        idempotencyKey: `pull:${pull.id}:${slotAt}:${from}-${to}`,
      });
      if (out.ok) {
        written += to - from;
        return null;
      }
      if (out.code === 'payload_too_large' && to - from > 1) {
        const mid = from + Math.floor((to - from) / 2);
        return (await send(from, mid)) ?? (await send(mid, to));
      }
      const part = written > 0 ? ` (${written} of ${records.length} records were written before it)` : '';
      return `the collection refused the records: ${out.code}: ${out.message}${part}`;
    };
    for (let i = 0; i < records.length; i += SINK_CHUNK_RECORDS) {
      const refusal = await send(i, Math.min(records.length, i + SINK_CHUNK_RECORDS));
      if (refusal) return refusal;
    }
    return null;
  }
}
