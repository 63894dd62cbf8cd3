import { iso } from '../clock.js';
import {
  TOTAL_HASH,
  type MonitorRecord,
  type Operator,
  type SeriesFilters,
  type SeriesStateRecord,
} from './monitor-records.js';

/** The key of the one state an `any_series` monitor keeps (it fires once for the metric as a whole). */
export const ANY_SERIES_KEY = '__any__';

/** One series of the window: its value over the window (window-values.ts), null when it has none. */
export interface SeriesValue {
  hash: string;
  label: string | null;
  dimensions: Record<string, unknown>;
  value: number | null;
}

/** The condition's verdict on one value (spec: existence means > 0; absence means no observations). */
export function conditionMet(
  m: Pick<MonitorRecord, 'condition_type' | 'operator' | 'threshold_value'>,
  value: number | null,
): boolean {
  switch (m.condition_type) {
    case 'absence':
      return (value ?? 0) === 0;
    case 'existence':
      return value !== null && value > 0;
    default:
      return value !== null && m.threshold_value !== null && compare(value, m.operator, m.threshold_value);
  }
}

export function compare(value: number, op: Operator, threshold: number): boolean {
  switch (op) {
    case 'gt':
      return value > threshold;
    case 'gte':
      return value >= threshold;
    case 'lt':
      return value < threshold;
    case 'lte':
      return value <= threshold;
    case 'eq':
      return value === threshold;
    case 'neq':
      return value !== threshold;
  }
}

/** Whether a series passes `series_filters`: every include field lists its value, no exclude field does. */
export function seriesWatched(filters: SeriesFilters | null, dimensions: Record<string, unknown>): boolean {
  if (!filters) return true;
  const text = (v: unknown) => (v === null || v === undefined ? 'null' : String(v));
  for (const [field, allowed] of Object.entries(filters.include ?? {}))
    if (!allowed.includes(text(dimensions[field]))) return false;
  for (const [field, refused] of Object.entries(filters.exclude ?? {}))
    if (refused.includes(text(dimensions[field]))) return false;
  return true;
}

/** The series a monitor judges: the total for `total` scope (and metrics without group_by), else the watched series. */
export function watchedSeries(
  m: Pick<MonitorRecord, 'scope' | 'series_filters'>,
  grouped: boolean,
  series: readonly SeriesValue[],
): SeriesValue[] {
  if (m.scope === 'total' || !grouped) {
    const total = series.find((s) => s.hash === TOTAL_HASH);
    return [total ?? { hash: TOTAL_HASH, label: null, dimensions: {}, value: null }];
  }
  return series.filter((s) => s.hash !== TOTAL_HASH && seriesWatched(m.series_filters, s.dimensions));
}

/** One judged key of a slot: the series (or `__any__`), its value and whether the condition held. */
export interface Verdict {
  key: string;
  hash: string;
  label: string | null;
  value: number | null;
  met: boolean;
}

/** The verdicts of a slot by scope: one per series (each_series), one for the metric (total, any_series). */
export function verdicts(
  m: Pick<MonitorRecord, 'scope' | 'condition_type' | 'operator' | 'threshold_value'>,
  watched: readonly SeriesValue[],
): Verdict[] {
  const judged = watched.map((s) => ({
    key: s.hash,
    hash: s.hash,
    label: s.label,
    value: s.value,
    met: conditionMet(m, s.value),
  }));
  if (m.scope !== 'any_series') return judged;
  // Fires once for the metric: the first series (by hash) meeting the condition speaks for it.
  const sorted = [...judged].sort((a, b) => a.hash.localeCompare(b.hash));
  const first = sorted.find((v) => v.met);
  if (first) return [{ ...first, key: ANY_SERIES_KEY }];
  // For absence with no series at all, "nothing observed" holds for the metric.
  if (sorted.length === 0)
    return [{ key: ANY_SERIES_KEY, hash: TOTAL_HASH, label: null, value: null, met: m.condition_type === 'absence' }];
  const top = sorted.reduce((a, b) => ((b.value ?? -Infinity) > (a.value ?? -Infinity) ? b : a));
  return [{ ...top, key: ANY_SERIES_KEY, met: false }];
}

/** An alert to open (the store gives it an id, slug and the monitor's details). */
export interface AlertOpening {
  key: string;
  series_hash: string;
  series_label: string | null;
  created_at: string;
  /** `instant` alerts end when they open. */
  ended_at: string | null;
  trigger_value: number;
}

export interface SlotOutcome {
  /** Every state after the slot (keys not judged this slot and not firing are dropped). */
  states: SeriesStateRecord[];
  /** Keys whose stored state is to be removed. */
  removed: string[];
  opened: AlertOpening[];
  /** Open alerts that end: the alert id and its end time. */
  closed: Array<{ alert_id: string; ended_at: string; key: string }>;
}

/**
 * One slot of a scheduled monitor: the verdicts at `at` applied to the stored states (docs/monitors.md,
 * "Evaluation"). Pure: the caller stores the outcome in one transaction with the alerts it opens
 * and closes. Sustained: the condition must have held at every evaluation for `sustained_minutes`
 * (the clock starts at the first slot it held and stops at the first it did not). Occurrences: the
 * times it held within the last `occurrence_window_minutes` must number at least `min_occurrences`.
 * `spanning` alerts stay open while that holds; `instant` ones open and end at once, and again only
 * after the condition has cleared (so a condition that keeps holding is one alert, not one a slot).
 */
export function applySlot(
  m: MonitorRecord,
  at: number,
  judged: readonly Verdict[],
  previous: ReadonlyMap<string, SeriesStateRecord>,
): SlotOutcome {
  const out: SlotOutcome = { states: [], removed: [], opened: [], closed: [] };
  const atIso = iso(at);
  const seen = new Set<string>();
  for (const v of judged) {
    seen.add(v.key);
    const prev = previous.get(v.key);
    const s: SeriesStateRecord = prev
      ? { ...prev, series_label: v.label ?? prev.series_label }
      : {
          id: v.key,
          monitor_id: m.id,
          series_hash: v.key,
          series_label: v.label,
          is_firing: false,
          started_firing_at: null,
          last_triggered_at: null,
          last_value: null,
          occurrence_timestamps: null,
          pending_since: null,
          open_alert_id: null,
          last_notified_at: null,
        };
    s.last_value = v.value;
    let holds = v.met;
    let since = atIso;
    if (m.condition_type === 'sustained') {
      s.pending_since = v.met ? (s.pending_since ?? atIso) : null;
      holds = v.met && at - Date.parse(s.pending_since!) >= (m.sustained_minutes ?? 0) * 60_000;
      if (s.pending_since) since = s.pending_since;
    }
    if (m.min_occurrences !== null && m.occurrence_window_minutes !== null) {
      const from = at - m.occurrence_window_minutes * 60_000;
      const kept = (s.occurrence_timestamps ?? []).filter((t) => Date.parse(t) > from && Date.parse(t) < at);
      if (v.met) kept.push(atIso);
      s.occurrence_timestamps = kept;
      holds = kept.length >= m.min_occurrences;
      if (holds) since = kept[kept.length - m.min_occurrences]!;
    }
    if (m.alert_mode === 'instant') {
      if (holds && !s.is_firing) {
        out.opened.push({
          key: v.key,
          series_hash: v.hash,
          series_label: v.label,
          created_at: since,
          ended_at: atIso,
          trigger_value: v.value ?? 0,
        });
        s.last_triggered_at = atIso;
      }
      s.is_firing = holds;
      s.started_firing_at = holds ? (s.started_firing_at ?? since) : null;
    } else if (holds && !s.is_firing) {
      out.opened.push({
        key: v.key,
        series_hash: v.hash,
        series_label: v.label,
        created_at: since,
        ended_at: null,
        trigger_value: v.value ?? 0,
      });
      s.is_firing = true;
      s.started_firing_at = since;
      s.last_triggered_at = atIso;
    } else if (!holds && s.is_firing) {
      if (s.open_alert_id) out.closed.push({ alert_id: s.open_alert_id, ended_at: atIso, key: v.key });
      s.is_firing = false;
      s.started_firing_at = null;
      s.open_alert_id = null;
      s.last_notified_at = null;
    }
    out.states.push(s);
  }
  // A series no longer in the window (no data, or filtered out): its condition does not hold now.
  for (const [key, prev] of previous) {
    if (seen.has(key)) continue;
    if (prev.open_alert_id) out.closed.push({ alert_id: prev.open_alert_id, ended_at: atIso, key });
    out.removed.push(key);
  }
  return out;
}
