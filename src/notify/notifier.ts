import { randomBytes } from 'node:crypto';
import { notificationDeliveries } from '../self-metrics/registry.js';
import { Webhook } from 'standardwebhooks';
import { iso, type Clock } from '../clock.js';
import { ApiError, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/db.js';
import type { ProjectRecord } from '../catalog/records.js';
import { nextUpdatedAt } from '../catalog/timestamps.js';
import type { AlertRecord, MonitorRecord } from '../monitor/monitor-records.js';
import type { OutboundClient } from '../outbound/types.js';
import { OutboundError } from '../outbound/types.js';
import {
  CHANNEL_LIMITS,
  type ChannelRecord,
  type ChannelType,
  type DeliveryAttempt,
  type EventKind,
  type OutboxEntry,
} from './channel-records.js';
import { NotifyStore } from './notify-store.js';
import { alertmanagerBody, webhookBody } from './payloads.js';
import { retryDelay } from './retry-policy.js';

export interface NotifierDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  /** Taken at each send (tests may swap the client for one trusting a test CA). */
  outbound: () => OutboundClient;
  publicUrl: () => string;
  /** A receiver that has not answered in this long is a failed attempt (default SEND_TIMEOUT_MS). */
  sendTimeoutMs?: number;
}

export interface ChannelInput {
  name: string;
  type: ChannelType;
  url: string;
}

/** Entries sent in one pass, and at once. */
const BATCH = 64;
const PARALLEL = 8;
/** A receiver that has not answered in this long is a failed attempt (retried on the schedule). */
const SEND_TIMEOUT_MS = 10_000;

/**
 * Notification channels, the durable outbox and delivery (docs/notifications.md). Alert events are
 * staged by the monitor catalog inside the transaction that opens or ends the alert (`stageAlertEvent`),
 * one outbox entry per channel, so an alert is never stored without its notifications nor the other
 * way round. `deliverDue` sends what is due through the guarded outbound client: at least once, with
 * the event's stable id as `webhook-id`; an entry acknowledged (2xx) is marked delivered in LMDB and
 * never sent again, also across restarts.
 */
export class Notifier {
  readonly db: NotifyStore;
  /** Entries being sent → their attempt: a second caller waits for it instead of sending it again. */
  private readonly inFlight = new Map<string, Promise<DeliveryAttempt>>();
  /** Called after a commit that staged entries (the delivery job's kick). */
  onStaged: (() => void) | null = null;
  private readonly timeoutMs: number;

  constructor(private readonly deps: NotifierDeps) {
    this.db = new NotifyStore(deps.store);
    this.timeoutMs = deps.sendTimeoutMs ?? SEND_TIMEOUT_MS;
  }

  list(projectId: string): ChannelRecord[] {
    return this.db.channels.list(projectId);
  }

  get(projectId: string, id: string): ChannelRecord | undefined {
    return this.db.channels.get(projectId, id);
  }

  /** Create a channel; a webhook's `whsec_` secret is returned here only. The URL is checked as the outbound client would call it. */
  async create(project: ProjectRecord, input: ChannelInput): Promise<ChannelRecord> {
    await this.checkUrl(input.url);
    const now = iso(this.deps.clock.now());
    const c: ChannelRecord = {
      id: newId('notificationChannel'),
      team_id: project.team_id,
      project_id: project.id,
      name: input.name,
      type: input.type,
      url: input.url,
      secret: input.type === 'webhook' ? `whsec_${randomBytes(24).toString('base64')}` : null,
      status: 'active',
      disabled_reason: null,
      created_at: now,
      updated_at: now,
    };
    await this.deps.store.transaction(() => {
      if (this.db.channels.list(project.id).length >= CHANNEL_LIMITS.perProject)
        throw new ApiError('conflict', `A project holds at most ${CHANNEL_LIMITS.perProject} notification channels`);
      this.db.stageChannel(c);
    });
    return c;
  }

  /** Change name or URL, or re-enable (`status: "active"`) a channel the service disabled. */
  async update(
    current: ChannelRecord,
    change: Partial<Pick<ChannelRecord, 'name' | 'url'>> & { status?: 'active' },
  ): Promise<ChannelRecord> {
    if (change.url !== undefined) await this.checkUrl(change.url);
    return this.deps.store.transaction(() => {
      const c = this.db.channel(current.id);
      if (!c) throw notFound(`Notification channel ${current.id}`);
      const next: ChannelRecord = { ...c, ...change, updated_at: nextUpdatedAt(this.deps.clock, c.updated_at) };
      if (change.status === 'active') next.disabled_reason = null;
      this.db.stageChannel(next);
      return next;
    });
  }

  /** Delete a channel: its pending entries are dropped and its log removed. */
  async remove(current: ChannelRecord): Promise<void> {
    await this.deps.store.transaction(() => {
      for (const e of this.db.pendingOf(current.id))
        this.db.stageEntry({ ...e, status: 'dropped', next_attempt_at: null }, { replace: true });
      this.db.stageChannelRemoval(current);
    });
  }

  private async checkUrl(url: string): Promise<void> {
    const check = await this.deps.outbound().checkTarget(url, { requireHttps: true });
    if (!check.ok) {
      const message =
        check.code === 'not_https'
          ? 'must be an https URL'
          : check.code === 'blocked_address'
            ? `resolves to an address that is not public (${check.message}); only public addresses are called unless SLUICE_ALLOW_PRIVATE_TARGETS=1`
            : check.message;
      throw new ApiError('request_validation_failed', `body.url ${message}`, {
        details: [{ field: 'body.url', message }],
      });
    }
  }

  /**
   * Inside the transaction that opens, repeats or ends `alert`: one outbox entry per active channel
   * of the monitor. The event id is stable (`evt_<alert id>_<kind>[_<at>]`), so a repeat of the
   * same event (a transaction run again) is the same entry.
   */
  stageAlertEvent(
    kind: Exclude<EventKind, 'channel.test'>,
    monitor: MonitorRecord,
    alert: AlertRecord,
    at: number,
  ): void {
    const ids = monitor.notification_channel_ids ?? [];
    if (ids.length === 0) return;
    const eventId =
      kind === 'alert.repeat'
        ? `evt_${alert.id}_repeat_${at}`
        : `evt_${alert.id}_${kind === 'alert.opened' ? 'opened' : 'resolved'}`;
    const publicUrl = this.deps.publicUrl();
    const event = { alert, monitor };
    for (const id of ids) {
      const c = this.db.channel(id);
      if (c?.status !== 'active' || c.project_id !== monitor.project_id) continue;
      const body =
        c.type === 'webhook'
          ? webhookBody(kind, iso(at), event, publicUrl)
          : alertmanagerBody(kind, event, c, publicUrl);
      this.db.stageEntry({
        id: `${eventId}:${c.id}`,
        event_id: eventId,
        channel_id: c.id,
        project_id: c.project_id,
        kind,
        body,
        created_at: at,
        attempts: 0,
        next_attempt_at: at,
        status: 'pending',
        delivered_at: null,
      });
    }
    this.deps.store.afterCommit(() => this.onStaged?.());
  }

  /** Send a test event to a channel now and answer the attempt. */
  async test(channel: ChannelRecord): Promise<DeliveryAttempt> {
    const now = this.deps.clock.now();
    const eventId = `evt_test_${randomBytes(10).toString('hex')}`;
    const body =
      channel.type === 'webhook'
        ? webhookBody('channel.test', iso(now), null, this.deps.publicUrl())
        : alertmanagerBody('channel.test', null, channel, this.deps.publicUrl());
    const entry: OutboxEntry = {
      id: `${eventId}:${channel.id}`,
      event_id: eventId,
      channel_id: channel.id,
      project_id: channel.project_id,
      kind: 'channel.test',
      body,
      created_at: now,
      attempts: 0,
      next_attempt_at: null,
      status: 'pending',
      delivered_at: null,
    };
    // A test is one attempt, not retried: it answers whether the receiver works now.
    return this.send(entry, { retry: false });
  }

  /**
   * Send every entry due now (the delivery job; tests call it after moving the clock). Resolves once
   * each of them has been attempted — also those another call was already sending, which are waited
   * for, never sent twice at once.
   */
  async deliverDue(): Promise<void> {
    for (let round = 0; round < 100; round++) {
      const due = this.db.dueAt(this.deps.clock.now(), BATCH);
      const sending = due.map((e) => this.inFlight.get(e.id)).filter((p) => p !== undefined);
      const mine = due.filter((e) => !this.inFlight.has(e.id));
      if (mine.length === 0 && sending.length === 0) return;
      await Promise.all(sending.map((p) => p.catch(() => undefined)));
      for (let i = 0; i < mine.length; i += PARALLEL)
        await Promise.all(mine.slice(i, i + PARALLEL).map((e) => this.send(e, { retry: true })));
    }
  }

  private send(entry: OutboxEntry, opts: { retry: boolean }): Promise<DeliveryAttempt> {
    const running = this.inFlight.get(entry.id);
    if (running) return running;
    const attempt = this.attempt(entry, opts).finally(() => this.inFlight.delete(entry.id));
    this.inFlight.set(entry.id, attempt);
    return attempt;
  }

  private async attempt(entry: OutboxEntry, opts: { retry: boolean }): Promise<DeliveryAttempt> {
    const { clock } = this.deps;
    const channel = this.db.channel(entry.channel_id);
    const started = clock.now();
    const attemptNo = entry.attempts + 1;
    const base = {
      id: `${entry.id}:${attemptNo}`,
      channel_id: entry.channel_id,
      event_id: entry.event_id,
      kind: entry.kind,
      attempt: attemptNo,
      attempted_at: iso(started),
    };
    if (channel?.status !== 'active') {
      await this.deps.store.transaction(() =>
        this.db.stageEntry({ ...entry, status: 'dropped', next_attempt_at: null }, { replace: true }),
      );
      return { ...base, status: null, error: 'channel deleted or disabled', latency_ms: 0, outcome: 'failed' };
    }
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'Sluice-Notifications/1',
    };
    if (channel.type === 'webhook' && channel.secret) {
      const ts = new Date(Math.floor(started / 1000) * 1000);
      headers['webhook-id'] = entry.event_id;
      headers['webhook-timestamp'] = String(Math.floor(started / 1000));
      headers['webhook-signature'] = new Webhook(channel.secret).sign(entry.event_id, ts, entry.body);
    }
    let status: number | null = null;
    let error: string | null = null;
    let retryAfter: string | undefined;
    const t0 = performance.now();
    try {
      const res = await this.deps.outbound().fetch({
        url: channel.url,
        method: 'POST',
        headers,
        body: entry.body,
        requireHttps: true,
        connectTimeoutMs: this.timeoutMs,
        headersTimeoutMs: this.timeoutMs,
        bodyTimeoutMs: this.timeoutMs,
        maxBytes: 64 * 1024,
        maxRedirects: 0,
      });
      status = res.status;
      retryAfter = res.headers['retry-after'];
    } catch (err) {
      error = err instanceof OutboundError ? `${err.code}: ${err.message}` : String(err);
    }
    const latency = Math.round(performance.now() - t0);
    const ok = status !== null && status >= 200 && status < 300;
    const gone = status === 410;
    const now = clock.now();
    const delay =
      ok || gone || !opts.retry
        ? null
        : retryDelay(attemptNo, { retryAfter: status === 429 || status === 503 ? retryAfter : undefined, now });
    const outcome: DeliveryAttempt['outcome'] = ok
      ? 'delivered'
      : gone
        ? 'gone'
        : delay !== null
          ? 'retrying'
          : 'failed';
    const attempt: DeliveryAttempt = { ...base, status, error, latency_ms: latency, outcome };
    notificationDeliveries.inc({ outcome: outcome === 'gone' ? 'dropped' : outcome });
    await this.deps.store.transaction(() => {
      this.db.stageAttempt(attempt);
      if (entry.kind === 'channel.test') return;
      const next: OutboxEntry = {
        ...entry,
        attempts: attemptNo,
        status: ok ? 'delivered' : gone ? 'dropped' : delay !== null ? 'pending' : 'failed',
        next_attempt_at: delay !== null ? now + delay : null,
        delivered_at: ok ? now : null,
      };
      this.db.stageEntry(next, { replace: true });
      if (gone) {
        // 410 Gone: the receiver says it will never take these; stop sending to it until re-enabled.
        const c = this.db.channel(channel.id);
        if (c && c.status === 'active')
          this.db.stageChannel({
            ...c,
            status: 'disabled',
            disabled_reason: 'gone',
            updated_at: nextUpdatedAt(clock, c.updated_at),
          });
        for (const e of this.db.pendingOf(channel.id))
          if (e.id !== entry.id)
            this.db.stageEntry({ ...e, status: 'dropped', next_attempt_at: null }, { replace: true });
      }
    });
    if (gone) this.deps.log.warn({ channel_id: channel.id }, 'notification channel answered 410 Gone: disabled');
    return attempt;
  }
}
