/**
 * Notification channels and their outbox (docs/notifications.md). A channel is where a project's
 * monitors send alert events: a `webhook` (JSON signed per Standard Webhooks) or an `alertmanager`
 * receiver (the Alertmanager webhook v4 payload).
 */

export const CHANNEL_TYPES = ['webhook', 'alertmanager'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

export interface ChannelRecord {
  id: string;
  team_id: string;
  project_id: string;
  name: string;
  type: ChannelType;
  url: string;
  /** `whsec_…` (webhook channels): shown once at creation, then only its last 4 characters. */
  secret: string | null;
  status: 'active' | 'disabled';
  /** Why the service disabled it (`gone`: the receiver answered 410), else null. */
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

export type EventKind = 'alert.opened' | 'alert.resolved' | 'alert.repeat' | 'channel.test';

/** One event for one channel, written in the transaction that produced it; delivered at least once. */
export interface OutboxEntry {
  /** `<event id>:<channel id>`. */
  id: string;
  /** Stable per event (`webhook-id`): a receiver drops a repeat of an id it has seen. */
  event_id: string;
  channel_id: string;
  project_id: string;
  kind: EventKind;
  /** The exact bytes sent on every attempt. */
  body: string;
  created_at: number;
  attempts: number;
  next_attempt_at: number | null;
  status: 'pending' | 'delivered' | 'failed' | 'dropped';
  delivered_at: number | null;
}

/** One attempt as the delivery log shows it. */
export interface DeliveryAttempt {
  id: string;
  channel_id: string;
  event_id: string;
  kind: EventKind;
  attempt: number;
  attempted_at: string;
  /** HTTP status, or null when no answer came (the error says why). */
  status: number | null;
  error: string | null;
  latency_ms: number;
  outcome: 'delivered' | 'retrying' | 'failed' | 'gone';
}

export const CHANNEL_LIMITS = {
  name: 64,
  url: 2048,
  perProject: 50,
  /** Attempts shown in a channel's delivery log. */
  deliveryLog: 50,
  /** Channels one monitor may notify. */
  perMonitor: 10,
} as const;
