import type { Database } from 'lmdb';
import type { Store } from '../store/db.js';
import { Index, Table } from '../store/table.js';
import { CHANNEL_LIMITS, type ChannelRecord, type DeliveryAttempt, type OutboxEntry } from './channel-records.js';

/**
 * LMDB storage of notification channels (under their project), the outbox (by entry id, with a due
 * index ordered by next attempt) and each channel's delivery log (the last CHANNEL_LIMITS.deliveryLog
 * attempts). Writes (`stage*`) run inside `store.transaction`.
 */
export class NotifyStore {
  readonly channels: Table<ChannelRecord>;
  readonly channelProject: Index;
  readonly outbox: Database<OutboxEntry, string>;
  /** `[next_attempt_at, entry id]` → channel id, for every pending entry. */
  readonly due: Database<string, [number, string]>;
  readonly log: Database<DeliveryAttempt, [string, string, string]>;

  constructor(readonly store: Store) {
    this.channels = new Table(store, 'notification_channels');
    this.channelProject = new Index(store, 'notification_channel_project');
    this.outbox = store.db<OutboxEntry, string>('notify_outbox');
    this.due = store.db<string, [number, string]>('notify_due');
    this.log = store.db<DeliveryAttempt, [string, string, string]>('notify_log');
  }

  channel(id: string): ChannelRecord | undefined {
    const projectId = this.channelProject.get(id);
    return projectId ? this.channels.get(projectId, id) : undefined;
  }

  stageChannel(c: ChannelRecord): void {
    void this.channels.put(c.project_id, c);
    void this.channelProject.put(c.id, c.project_id);
  }

  stageChannelRemoval(c: ChannelRecord): void {
    void this.channels.remove(c.project_id, c.id);
    void this.channelProject.remove(c.id);
    for (const { key } of this.log.getRange({ start: [c.id, '', ''], end: [c.id, '\uffff', ''] }))
      void this.log.remove(key);
  }

  /** Stage an entry; a pending one is put on the due index (an entry already stored is left as it is: events are written once). */
  stageEntry(e: OutboxEntry, opts: { replace?: boolean } = {}): void {
    const old = this.outbox.get(e.id);
    if (old && !opts.replace) return;
    if (old?.next_attempt_at != null) void this.due.remove([old.next_attempt_at, old.id]);
    void this.outbox.put(e.id, e);
    if (e.status === 'pending' && e.next_attempt_at !== null)
      void this.due.put([e.next_attempt_at, e.id], e.channel_id);
  }

  /** Up to `limit` entries due at `now`, earliest first. */
  dueAt(now: number, limit: number): OutboxEntry[] {
    const out: OutboxEntry[] = [];
    for (const { key } of this.due.getRange({ start: [0, ''], end: [now, '\uffff'], limit })) {
      const e = this.outbox.get(key[1]);
      if (e && e.status === 'pending') out.push(e);
    }
    return out;
  }

  /** The earliest pending attempt time, or null. */
  nextDue(): number | null {
    for (const { key } of this.due.getRange({ limit: 1 })) return key[0];
    return null;
  }

  pendingOf(channelId: string): OutboxEntry[] {
    const out: OutboxEntry[] = [];
    for (const { key, value } of this.due.getRange({})) {
      if (value !== channelId) continue;
      const e = this.outbox.get(key[1]);
      if (e) out.push(e);
    }
    return out;
  }

  /** Append to the delivery log, keeping the newest CHANNEL_LIMITS.deliveryLog attempts of the channel. */
  stageAttempt(a: DeliveryAttempt): void {
    void this.log.put([a.channel_id, a.attempted_at, a.id], a);
    // Whether the read sees the put above or not, the others are counted without it.
    const others = [...this.log.getKeys({ start: [a.channel_id, '', ''], end: [a.channel_id, '\uffff', ''] })].filter(
      (k) => k[2] !== a.id,
    );
    for (const key of others.slice(0, Math.max(0, others.length + 1 - CHANNEL_LIMITS.deliveryLog)))
      void this.log.remove(key);
  }

  /** The delivery log of a channel, newest first. */
  attempts(channelId: string): DeliveryAttempt[] {
    const out: DeliveryAttempt[] = [];
    for (const { value } of this.log.getRange({
      start: [channelId, '\uffff', ''],
      end: [channelId, '', ''],
      reverse: true,
    }))
      out.push(value);
    return out;
  }
}
