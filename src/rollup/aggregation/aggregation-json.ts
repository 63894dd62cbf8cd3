import type { AggregationAnswer } from './run-aggregation.js';
import { joinJson } from '../../json-text.js';
import { writeRecordsJson } from './series-records.js';

/**
 * The JSON text of a TimeseriesAggregation (what JSON.stringify of runAggregation's answer gives,
 * member for member): the records, nearly all of a by-minute answer's ~700 KB, are written straight
 * from their tables into one list of parts joined once; the rest by JSON.stringify.
 */
export function aggregationJson(a: AggregationAnswer): string {
  const out = aggregationJsonParts(a);
  return typeof out === 'string' ? out : out.toString('utf8');
}

/** `aggregationJson` as the response writes it: a string, or one buffer when sealed buckets brought their text as bytes. */
export function aggregationJsonParts(a: AggregationAnswer): string | Buffer {
  const head = {
    object: a.object,
    coverage_mode: a.coverage_mode,
    coverage_reasons: a.coverage_reasons,
    start_at: a.start_at,
    end_at: a.end_at,
    interval: a.interval,
    values: a.values,
  };
  const tail = { series_total: a.series_total, complete_through_at: a.complete_through_at };
  const out: Array<string | Buffer> = [`${JSON.stringify(head).slice(0, -1)},"series":[`];
  a.series.forEach((s, i) => {
    out.push(`${i === 0 ? '' : ','}{"details":${JSON.stringify(s.details)},"records":`);
    writeRecordsJson(s.table, out);
    out.push(`,"regression":${JSON.stringify(s.regression)},"forecast":${JSON.stringify(s.forecast)}}`);
  });
  out.push(`],${JSON.stringify(tail).slice(1)}`);
  return joinJson(out);
}
