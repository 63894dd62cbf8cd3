import type { DiscoveredTarget } from '../records.js';
import { delimitedRecords } from './csv.js';
import { FormatError } from './format-error.js';
import { looksLikeSd, sdTargets } from './http-sd.js';
import { jsonRecords, type RecordObject } from './json.js';
import { jsonlRecords } from './jsonl.js';
import { metricsRecords } from './metrics-text.js';

export type BodyFormat = 'json' | 'jsonl' | 'csv' | 'tsv' | 'prometheus' | 'openmetrics';

export type ParsedBody =
  | { kind: 'records'; format: BodyFormat; records: RecordObject[] }
  | { kind: 'sd'; targets: DiscoveredTarget[] };

/** The format a Content-Type names, or null when it names none we read (the body is then sniffed). */
export function formatOfContentType(contentType: string | undefined): BodyFormat | null {
  if (!contentType) return null;
  const [type = '', ...params] = contentType
    .toLowerCase()
    .split(';')
    .map((p) => p.trim());
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  if (
    [
      'application/x-ndjson',
      'application/ndjson',
      'application/jsonl',
      'application/x-jsonlines',
      'application/jsonlines',
    ].includes(type)
  )
    return 'jsonl';
  if (type === 'text/csv') return 'csv';
  if (type === 'text/tab-separated-values') return 'tsv';
  if (type === 'application/openmetrics-text') return 'openmetrics';
  if (type === 'text/plain' && params.some((p) => p.replace(/\s/g, '') === 'version=0.0.4')) return 'prometheus';
  return null;
}

const SAMPLE = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{|[ \t]+\S)/;

/** A format from the body itself, when the Content-Type says nothing we read. */
export function sniffFormat(text: string): BodyFormat {
  const body = text.replace(/^\ufeff/, '');
  const trimmed = body.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      JSON.parse(body);
      return 'json';
    } catch {
      const lines = trimmed.split('\n').filter((l) => l.trim() !== '');
      return lines.length > 1 && lines[0]!.trim().startsWith('{') ? 'jsonl' : 'json';
    }
  }
  if (/(^|\n)# EOF\r?\n?$/.test(body)) return 'openmetrics';
  const first = trimmed.split('\n', 1)[0]!.replace(/\r$/, '');
  if (/^#[ \t]+(HELP|TYPE)[ \t]/.test(first)) return 'prometheus';
  if (first.includes('\t') && !first.includes('{')) {
    const fields = first.split('\t');
    if (fields.length !== 2 || Number.isNaN(Number(fields[1]))) return 'tsv';
  }
  if (SAMPLE.test(first) && !first.includes(',')) return 'prometheus';
  if (first.includes(',')) return 'csv';
  if (first.includes('\t')) return 'tsv';
  throw new FormatError(
    'unknown',
    'could not tell the format of the response: send a Content-Type (application/json, application/x-ndjson, text/csv, text/tab-separated-values, text/plain; version=0.0.4 or application/openmetrics-text)',
    1,
    1,
  );
}

/**
 * A response body as records, or as a service-discovery document to follow (rule 3; only without
 * `json_records_path`). All or nothing: any format error throws FormatError and nothing is kept.
 */
export function parseBody(text: string, contentType: string | undefined, recordsPath: string | null): ParsedBody {
  const format = formatOfContentType(contentType) ?? sniffFormat(text);
  switch (format) {
    case 'json': {
      if (recordsPath === null) {
        // The cheap test first: an SD document is a JSON array of target groups.
        const t = text.trimStart();
        if (t.startsWith('[') || t.startsWith('\ufeff[')) {
          let doc: unknown;
          try {
            doc = JSON.parse(text.replace(/^\ufeff/, ''));
          } catch {
            doc = undefined;
          }
          if (looksLikeSd(doc)) return { kind: 'sd', targets: sdTargets(doc) };
        }
      }
      return { kind: 'records', format, records: jsonRecords(text, recordsPath) };
    }
    case 'jsonl':
      return { kind: 'records', format, records: jsonlRecords(text) };
    case 'csv':
      return { kind: 'records', format, records: delimitedRecords(text, ',') };
    case 'tsv':
      return { kind: 'records', format, records: delimitedRecords(text, '\t') };
    case 'prometheus':
    case 'openmetrics':
      return { kind: 'records', format, records: metricsRecords(text, format) as unknown as RecordObject[] };
  }
}
