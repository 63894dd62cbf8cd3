import { createHash } from 'node:crypto';
import { serializeAlert } from '../monitor/alert-json.js';
import type { AlertRecord, MonitorRecord } from '../monitor/monitor-records.js';
import type { ChannelRecord, EventKind } from './channel-records.js';

/** The alert as a notification carries it (the API's alert object). */
export interface AlertEventData {
  alert: AlertRecord;
  monitor: Pick<MonitorRecord, 'id' | 'name' | 'slug' | 'metric_id' | 'project_id'>;
}

/**
 * The `webhook` body (Standard Webhooks' recommended envelope): `{ type, timestamp, data }` with
 * `data.alert` the API's alert object and `data.monitor` the monitor's id, name, slug and metric.
 */
export function webhookBody(kind: EventKind, at: string, e: AlertEventData | null, publicUrl: string): string {
  if (!e) return JSON.stringify({ type: kind, timestamp: at, data: { message: 'Test notification from Sluice' } });
  return JSON.stringify({
    type: kind,
    timestamp: at,
    data: {
      alert: serializeAlert(e.alert),
      monitor: { id: e.monitor.id, name: e.monitor.name, slug: e.monitor.slug, metric_id: e.monitor.metric_id },
      url: `${publicUrl}/v1/projects/${e.alert.project_id}/alerts/${e.alert.id}`,
    },
  });
}

/**
 * The Alertmanager webhook payload, version 4, so any receiver written for Alertmanager works
 * unchanged: one alert per message; `status` `firing` while open and `resolved` once ended;
 * labels `alertname` (monitor name), `monitor_id`, `metric_id`, `series`; the fingerprint is
 * stable per alert; `endsAt` is the zero time while firing, as Alertmanager sends it.
 */
export function alertmanagerBody(
  kind: EventKind,
  e: AlertEventData | null,
  channel: ChannelRecord,
  publicUrl: string,
): string {
  const ZERO = '0001-01-01T00:00:00Z';
  if (!e) {
    const labels = { alertname: 'SluiceTest', channel_id: channel.id };
    return JSON.stringify({
      version: '4',
      groupKey: `{}:{alertname="SluiceTest"}`,
      truncatedAlerts: 0,
      status: 'resolved',
      receiver: channel.name,
      groupLabels: { alertname: 'SluiceTest' },
      commonLabels: labels,
      commonAnnotations: { summary: 'Test notification from Sluice' },
      externalURL: publicUrl,
      alerts: [
        {
          status: 'resolved',
          labels,
          annotations: { summary: 'Test notification from Sluice' },
          startsAt: new Date().toISOString(),
          endsAt: new Date().toISOString(),
          generatorURL: publicUrl,
          fingerprint: 'sluice-test',
        },
      ],
    });
  }
  const a = e.alert;
  const status = kind === 'alert.resolved' || a.ended_at !== null ? 'resolved' : 'firing';
  const labels: Record<string, string> = {
    alertname: e.monitor.name,
    monitor_id: e.monitor.id,
    metric_id: a.metric_id,
    series: a.series_label ?? a.series_hash,
  };
  const annotations = {
    summary: `${e.monitor.name}: ${a.condition_description}`,
    description: `${a.metric_name ?? a.metric_id} ${a.series_label ? `(${a.series_label}) ` : ''}was ${a.trigger_value} (threshold ${a.threshold_value})`,
    alert_id: a.id,
  };
  const generatorURL = `${publicUrl}/v1/projects/${a.project_id}/metrics/${a.metric_id}/monitors/${e.monitor.id}`;
  return JSON.stringify({
    version: '4',
    groupKey: `{}:{alertname=${JSON.stringify(e.monitor.name)}, monitor_id="${e.monitor.id}"}`,
    truncatedAlerts: 0,
    status,
    receiver: channel.name,
    groupLabels: { alertname: e.monitor.name, monitor_id: e.monitor.id },
    commonLabels: labels,
    commonAnnotations: annotations,
    externalURL: publicUrl,
    alerts: [
      {
        status,
        labels,
        annotations,
        startsAt: a.created_at,
        endsAt: a.ended_at ?? ZERO,
        generatorURL,
        fingerprint: createHash('sha256').update(a.id).digest('hex').slice(0, 16),
      },
    ],
  });
}
