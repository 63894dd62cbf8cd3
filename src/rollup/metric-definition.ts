import type { FieldIssue } from '../errors.js';
import type { OutputField, OutputFieldType, ViewRecord } from '../transform/view-records.js';
import { FilterError, prepareFilter } from './filter-expression.js';
import { EVENT_TIME_FIELD, VALUE_FIELD_CHART_VALUES, type MetricSettings } from './metric-records.js';

/**
 * The checks of a metric's definition against the view it aggregates, which a JSON Schema cannot
 * express: every field it names must be an output field of the view, of a type that fits its role,
 * the filter must parse and check against the view's fields, and the settings must agree with each
 * other. Answers every problem (empty: valid), each naming its body field. Field names and filter
 * text are only ever compared with the view's schema: text that looks like SQL is just an unknown
 * field or a filter syntax error.
 */
export function checkMetricDefinition(m: MetricSettings, view: ViewRecord): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const byName = new Map(view.output_schema.map((f) => [f.name, f]));
  const known = describeFields(view);

  /** The output field `name` (reported at `field`), if it exists and its type is one of `types`. */
  const ref = (
    field: string,
    name: string,
    types: readonly OutputFieldType[] | null,
    role: string,
  ): OutputField | undefined => {
    const f = byName.get(name);
    if (!f) {
      issues.push({ field, message: `names "${name}", which is not an output field of view ${view.id} (${known})` });
      return undefined;
    }
    if (types && !types.includes(f.type)) {
      issues.push({
        field,
        message: `names "${name}", a ${f.type} field; ${role} must be ${types.map((t) => `a ${t}`).join(' or ')} field`,
      });
      return undefined;
    }
    return f;
  };

  const seen = new Set<string>();
  m.group_by.forEach((name, i) => {
    const field = `body.group_by[${i}]`;
    if (seen.has(name)) issues.push({ field, message: `repeats "${name}"; each field groups once` });
    seen.add(name);
    ref(
      field,
      name,
      ['string', 'number', 'boolean', 'date', 'null'],
      'a group_by field (series are value combinations, so not an array)',
    );
  });

  if (m.timestamp_field !== EVENT_TIME_FIELD) {
    ref(
      'body.timestamp_field',
      m.timestamp_field,
      ['date'],
      `the timestamp field (or "${EVENT_TIME_FIELD}", the record's event time)`,
    );
  }

  if (m.value_field !== null) ref('body.value_field', m.value_field, ['number'], 'the value field');
  if (m.value_field === null && VALUE_FIELD_CHART_VALUES.has(m.ui_chart_value)) {
    issues.push({
      field: 'body.value_field',
      message: `is required: ui_chart_value "${m.ui_chart_value}" aggregates the numbers of a value field`,
    });
  }

  if (m.unique_field !== null)
    ref('body.unique_field', m.unique_field, ['string', 'number', 'boolean', 'date', 'null'], 'the unique field');
  if (m.unique_field === null && m.ui_chart_value === 'count_unique') {
    issues.push({
      field: 'body.unique_field',
      message: 'is required: ui_chart_value "count_unique" counts the distinct values of a unique field',
    });
  }

  for (const [key, display] of Object.entries(m.group_by_display_fields ?? {})) {
    const field = `body.group_by_display_fields.${key}`;
    if (!m.group_by.includes(key)) {
      issues.push({
        field,
        message: `has the key "${key}", which is not a group_by field (group_by: ${m.group_by.length ? m.group_by.join(', ') : 'empty'})`,
      });
      continue;
    }
    ref(field, display, null, 'a display field');
  }

  try {
    prepareFilter(m.filters, view.output_schema);
  } catch (err) {
    if (!(err instanceof FilterError)) throw err;
    issues.push({ field: 'body.filters', message: err.message });
  }

  const start = m.ui_chart_custom_range_start_at;
  const end = m.ui_chart_custom_range_end_at;
  if ((start === null) !== (end === null)) {
    issues.push({
      field: start === null ? 'body.ui_chart_custom_range_start_at' : 'body.ui_chart_custom_range_end_at',
      message: 'must be set together with the other end of the custom range (or both null)',
    });
  } else if (start !== null && end !== null && Date.parse(start) >= Date.parse(end)) {
    issues.push({
      field: 'body.ui_chart_custom_range_end_at',
      message: `must be later than ui_chart_custom_range_start_at (${start})`,
    });
  }
  if (m.ui_chart_time_range === 'custom' && (start === null || end === null)) {
    issues.push({
      field: 'body.ui_chart_time_range',
      message: 'is "custom", which needs ui_chart_custom_range_start_at and ui_chart_custom_range_end_at',
    });
  }
  if (m.ui_chart_y_min !== null && m.ui_chart_y_max !== null && m.ui_chart_y_min >= m.ui_chart_y_max) {
    issues.push({ field: 'body.ui_chart_y_max', message: `must be greater than ui_chart_y_min (${m.ui_chart_y_min})` });
  }
  return issues;
}

/** "its output fields are: a (string), b (number)" or a note that the schema is still empty. */
function describeFields(view: ViewRecord): string {
  if (view.output_schema.length === 0)
    return 'its output schema is still empty: declare it, or wait until the first records infer it';
  return `its output fields are: ${view.output_schema.map((f) => `${f.name} (${f.type})`).join(', ')}`;
}
