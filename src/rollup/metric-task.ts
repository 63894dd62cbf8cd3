import type { OutputField } from '../transform/output-schema.js';
import type { MetricRecord } from './metric-records.js';
import type { MetricPartials } from './rollup-types.js';

/**
 * What a pipeline worker needs of one metric to build its partials from a view's output: the
 * definition fields that decide which records count and how (never the display settings). Built on
 * the main thread per batch, like view tasks, so a worker never reads LMDB.
 */
export interface MetricTask {
  metricId: string;
  /** `definition_revision` the partials are built for (the commit drops them if it moved on). */
  revision: number;
  groupBy: string[];
  filters: string;
  /** The view's output schema the filter is checked against. */
  fields: OutputField[];
  timestampField: string;
  valueField: string | null;
  uniqueField: string | null;
  /** group_by field → the field whose value labels its series; null when none. */
  displayFields: Record<string, string> | null;
  /**
   * Only records whose event time (`__ts`) is at or after `eventFrom` and before `eventBefore`
   * count (docs/metrics.md, "Late data"): a live batch leaves late events out with `eventFrom`, a
   * re-backfill folds exactly those back with `eventBefore`. Absent: no bound.
   */
  eventFrom?: number;
  eventBefore?: number;
}

/** A metric's result for one batch: its partials, or why it failed (the batch goes on either way). */
export type MetricOutcome =
  | { status: 'ok'; partials: MetricPartials }
  | { status: 'failed'; metricId: string; revision: number; message: string };

/** Statuses whose metrics take live partials (an errored or cancelled one waits for a rebuild). */
export function feedsLive(m: Pick<MetricRecord, 'status'>): boolean {
  return m.status !== 'error' && m.status !== 'cancelled';
}

export function metricTaskOf(m: MetricRecord, fields: OutputField[]): MetricTask {
  return {
    metricId: m.id,
    revision: m.definition_revision,
    groupBy: m.group_by,
    filters: m.filters,
    fields,
    timestampField: m.timestamp_field,
    valueField: m.value_field,
    uniqueField: m.unique_field,
    displayFields: m.group_by_display_fields,
  };
}
