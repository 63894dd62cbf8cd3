import type { ProjectRecord } from '../catalog/records.js';
import { iso, type Clock } from '../clock.js';
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import type { OutboundClient } from '../outbound/types.js';
import type { RecordSink } from '../ingest/record-sink-types.js';
import type { JobHandle, Scheduler, SlotRun } from '../schedule/types.js';
import type { Store } from '../store/db.js';
import { pullRuns } from '../self-metrics/registry.js';
import { FetchJobRepo } from './fetch-job-repo.js';
import type { HeaderList } from './headers.js';
import type { FetchLimits } from './fetch-once.js';
import type { Limiter } from './limiter.js';
import type { FetchKind, ScheduledFetchRecord, StoredHeader } from './records.js';
import { checkCreateRequest, type RequestInput } from './request-rules.js';
import type { SecretBox } from './secret-box.js';
import { sleep, spreadOffset } from './spread.js';

/** What pulls and checks need from the node. */
export interface FetchJobDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  box: SecretBox;
  outbound: OutboundClient;
  sink: RecordSink;
  scheduler: Scheduler;
  /** Shared by pulls and checks: runs in flight at once. */
  limiter: Limiter;
  /** Whether a team is in good standing (active, not scheduled for deletion); checks stop while it is not. */
  teamInGoodStanding: (teamId: string) => boolean;
  /** The source a record writes into: its deletion mark, or undefined once it is destroyed. */
  source: (sourceId: string) => { deleted_at: string | null } | undefined;
  /** Timeouts and size caps of pulls and checks (fetch-once.ts `fetchLimits`). */
  limits: { pull: FetchLimits; check: FetchLimits };
  /** Runs due on one minute start spread over this many ms after it (config `fetchSpreadMs`). */
  spreadMs: number;
}

/**
 * What pulls and checks share: the store, sealed headers, one durable scheduler job per active
 * record (`pull:<id>` / `check:<id>`, missed slots counted and never run late), pause, resume and
 * delete. `runOne` is the kind's own run.
 */
export class FetchJobs<T extends ScheduledFetchRecord> {
  readonly repo: FetchJobRepo<T>;
  private readonly handles = new Map<string, JobHandle>();

  constructor(
    readonly deps: FetchJobDeps,
    readonly kind: FetchKind,
    private readonly runOne: (record: T, slot: SlotRun) => Promise<void>,
    /**
     * Checks: the service stops the record (`disabled`) while its team is not in good standing and
     * starts it again on its own when standing is restored; the job stays registered meanwhile.
     */
    private readonly followsStanding = false,
  ) {
    this.repo = new FetchJobRepo<T>(deps.store, deps.clock, kind);
  }

  /** Register a job for every active record (at start). */
  start(): void {
    for (const record of this.repo.all())
      if (record.status === 'active' || (this.followsStanding && record.status === 'disabled')) this.schedule(record);
  }

  /** The next slot of an active record, as the API shows it (`next_fetch_at`). */
  nextFetchAt(record: T): string | null {
    if (record.status !== 'active') return null;
    const next = this.handles.get(record.id)?.nextAt() ?? null;
    return next === null ? null : iso(next);
  }

  /** Header values sealed under the record's id and the header's name (secret-box.ts). */
  seal(id: string, headers: HeaderList): StoredHeader[] {
    return headers.map((h) => ({
      name: h.name,
      sealed: this.deps.box.seal(h.value, `${id}\u0000${h.name.toLowerCase()}`),
    }));
  }

  /** Plain header values for a request; never logged nor returned. */
  open(id: string, headers: StoredHeader[]): Record<string, string> {
    const out: Record<string, string> = {};
    for (const h of headers) out[h.name] = this.deps.box.open(h.sealed, `${id}\u0000${h.name.toLowerCase()}`);
    return out;
  }

  /**
   * The fields every new pull or check starts with: a fresh id, the request with its defaults after
   * every request rule held (request-rules.ts `checkCreateRequest`, which throws the rule's 400),
   * headers sealed, healthy and never run, `active`. The kind adds its own fields and calls `create`.
   */
  async newJobRecord(
    project: ProjectRecord,
    input: RequestInput & { name: string; source_id: string },
    collectionSlug: string,
  ): Promise<ScheduledFetchRecord> {
    const { method, body, cron, headers } = await checkCreateRequest(this.deps.outbound, input);
    const id = newId(this.kind);
    const now = iso(this.deps.clock.now());
    return {
      id,
      team_id: project.team_id,
      project_id: project.id,
      name: input.name,
      source_id: input.source_id,
      collection_slug: collectionSlug,
      endpoint_url: input.endpoint_url,
      method,
      headers: this.seal(id, headers),
      request_body: body,
      schedule_cron: cron,
      status: 'active',
      missed_slot_count: 0,
      last_attempt_at: null,
      last_success_at: null,
      last_failure_at: null,
      consecutive_failure_count: 0,
      failing_since: null,
      last_error: null,
      last_error_stage: null,
      last_http_status: null,
      last_response_time_ms: null,
      hourly: [],
      created_at: now,
      updated_at: now,
    };
  }

  async create(record: T): Promise<T> {
    const created = await this.repo.create(record);
    this.schedule(created);
    return created;
  }

  /**
   * A user's change. A new `schedule_cron` restarts the missed-slot count and the job's slots from
   * now; a run in flight keeps the record it read when it started (rule 10).
   */
  async update(current: T, patch: Partial<T>): Promise<T> {
    const cronChanged = patch.schedule_cron !== undefined && patch.schedule_cron !== current.schedule_cron;
    const next = await this.repo.update(current.project_id, current.id, () => ({
      ...patch,
      ...(cronChanged ? { missed_slot_count: 0 } : {}),
    }));
    if (!next) throw new ApiError('not_found', `${label(this.kind)} ${current.id} not found`);
    // Any registered job follows the new schedule (an active one, or a check stopped for its team's standing).
    if (cronChanged) this.handles.get(next.id)?.reschedule({ cron: next.schedule_cron });
    return next;
  }

  /** Only an active record can be paused; pausing a paused one succeeds unchanged. */
  async pause(current: T): Promise<T> {
    if (current.status === 'paused') return current;
    if (current.status !== 'active') {
      throw new ApiError(
        'conflict',
        `The ${this.kind} is ${current.status}; only an active ${this.kind} can be paused (resume it first)`,
        { details: [{ field: 'status', message: `is ${current.status}` }] },
      );
    }
    const next = await this.repo.update(current.project_id, current.id, () => ({ status: 'paused' }) as Partial<T>);
    await this.unschedule(current.id);
    return next ?? current;
  }

  /** Back to active with the missed-slot and failure counts cleared (plus the kind's own `extra`); an active one is returned unchanged. */
  async resume(current: T, extra: Partial<T>): Promise<T> {
    if (current.status === 'active') return current;
    const next = await this.repo.update(
      current.project_id,
      current.id,
      () =>
        ({
          status: 'active',
          missed_slot_count: 0,
          consecutive_failure_count: 0,
          failing_since: null,
          ...extra,
        }) as Partial<T>,
    );
    if (!next) throw new ApiError('not_found', `${label(this.kind)} ${current.id} not found`);
    this.schedule(next);
    return next;
  }

  /** Delete: the job stops (after a run in flight), then the record goes; records already written stay. */
  async remove(current: T): Promise<void> {
    await this.unschedule(current.id);
    await this.repo.remove(current.project_id, current.id);
  }

  /** The service stopped the record (a pull's failure streak): its job goes, the record stays. */
  async stopJob(id: string): Promise<void> {
    await this.unschedule(id);
  }

  private schedule(record: T): void {
    if (this.handles.has(record.id)) return;
    const id = record.id;
    const handle = this.deps.scheduler.register({
      name: `${this.kind}:${id}`,
      schedule: { cron: record.schedule_cron },
      durable: true,
      missed: 'count',
      run: (slot) => this.runSlot(id, slot),
    });
    this.handles.set(id, handle);
  }

  private async unschedule(id: string): Promise<void> {
    const handle = this.handles.get(id);
    if (!handle) return;
    this.handles.delete(id);
    await handle.unregister();
  }

  /** A check's status follows its team's standing: disabled while it is lost, active again once restored. */
  private async followStanding(record: T): Promise<T> {
    const good = this.deps.teamInGoodStanding(record.team_id);
    if (record.status === 'active' && !good) {
      this.deps.log.warn(
        { [`${this.kind}_id`]: record.id, team_id: record.team_id },
        `${this.kind} stopped: the team is not in good standing`,
      );
      return (
        (await this.repo.update(
          record.project_id,
          record.id,
          (c) => (c.status === 'active' ? ({ status: 'disabled' } as Partial<T>) : null),
          { touch: false },
        )) ?? record
      );
    }
    if (record.status === 'disabled' && good) {
      return (
        (await this.repo.update(
          record.project_id,
          record.id,
          (c) => (c.status === 'disabled' ? ({ status: 'active' } as Partial<T>) : null),
          { touch: false },
        )) ?? record
      );
    }
    return record;
  }

  private async runSlot(id: string, slot: SlotRun): Promise<void> {
    const { clock, limiter, log } = this.deps;
    // Spread the minute's runs over its first seconds (a fixed offset per job), then bound how many run at once.
    await sleep(slot.at + spreadOffset(id, this.deps.spreadMs) - clock.now(), slot.signal);
    if (slot.signal.aborted) return;
    await limiter.run(async () => {
      // The record as it is now is the configuration this run uses to the end (rule 10).
      let record = this.repo.byId(id);
      if (!record) return;
      const source = this.deps.source(record.source_id);
      if (!source) {
        // The source was destroyed (force delete or purge): its pulls and checks go with it.
        this.deps.log.info(
          { [`${this.kind}_id`]: id, source_id: record.source_id },
          `${this.kind} removed with its source`,
        );
        void this.remove(record);
        return;
      }
      // A source scheduled for deletion takes no records: nothing is fetched until it is restored.
      if (source.deleted_at !== null) {
        pullRuns.inc({ kind: this.kind, outcome: 'skipped' });
        return;
      }
      try {
        if (this.followsStanding) record = await this.followStanding(record);
        if (record.status !== 'active') {
          pullRuns.inc({ kind: this.kind, outcome: 'skipped' });
          return;
        }
        if (slot.missed > 0) {
          record =
            (await this.repo.update(
              record.project_id,
              id,
              (c) => ({ missed_slot_count: c.missed_slot_count + slot.missed }) as Partial<T>,
              { touch: false },
            )) ?? record;
        }
        await this.runOne(record, slot);
      } catch (err) {
        log.error({ err, [`${this.kind}_id`]: id }, `${this.kind} run failed`);
      }
    });
  }
}

function label(kind: FetchKind): string {
  return kind === 'pull' ? 'Pull' : 'Check';
}
