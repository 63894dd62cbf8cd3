import type { MonitorSettings, Operator } from './monitor-records.js';

const OPERATOR_TEXT: Record<Operator, string> = { gt: '>', gte: '>=', lt: '<', lte: '<=', eq: '=', neq: '!=' };

function minutes(n: number): string {
  if (n % 1440 === 0) return n === 1440 ? '1 day' : `${n / 1440} days`;
  if (n % 60 === 0) return n === 60 ? '1 hour' : `${n / 60} hours`;
  return n === 1 ? '1 minute' : `${n} minutes`;
}

/**
 * The condition in words, as alerts carry it (`condition_description`), e.g.
 * `p95 over the last 5 minutes > 250 for 10 minutes, for each series`.
 */
export function describeCondition(
  m: Pick<
    MonitorSettings,
    | 'chart_value'
    | 'scope'
    | 'time_window_minutes'
    | 'condition_type'
    | 'operator'
    | 'threshold_value'
    | 'sustained_minutes'
    | 'min_occurrences'
    | 'occurrence_window_minutes'
  >,
): string {
  const window =
    m.time_window_minutes === null ? 'since the metric was created' : `over the last ${minutes(m.time_window_minutes)}`;
  let text: string;
  switch (m.condition_type) {
    case 'absence':
      text = `no observations ${m.time_window_minutes === null ? window : `in the last ${minutes(m.time_window_minutes)}`}`;
      break;
    case 'existence':
      text = `${m.chart_value} ${window} > 0`;
      break;
    default:
      text = `${m.chart_value} ${window} ${OPERATOR_TEXT[m.operator]} ${m.threshold_value}`;
      if (m.condition_type === 'sustained' && m.sustained_minutes !== null)
        text += ` for ${minutes(m.sustained_minutes)}`;
  }
  if (m.min_occurrences !== null && m.occurrence_window_minutes !== null) {
    text += `, at least ${m.min_occurrences} ${m.min_occurrences === 1 ? 'time' : 'times'} within ${minutes(m.occurrence_window_minutes)}`;
  }
  if (m.scope === 'any_series') text += ', for any series';
  if (m.scope === 'each_series') text += ', for each series';
  return text;
}
