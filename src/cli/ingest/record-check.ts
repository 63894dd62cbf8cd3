import { timestampMs } from '../../timestamp.js';

/**
 * Why the server would refuse this record, or null: the same rules as the ingest front
 * (docs/ingest.md, "Body"): a JSON object, and a `timestamp`, when present, that is an ISO 8601
 * instant or epoch milliseconds (src/timestamp.ts, the server's own reading). Checking here lets the
 * good records of a batch go in and names the bad ones by their line in the file.
 */
export function recordRefusal(text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `not valid JSON: ${(err as Error).message}`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'a record must be a JSON object';
  const ts = (value as Record<string, unknown>).timestamp;
  if (ts !== undefined && Number.isNaN(timestampMs(ts)))
    return `timestamp ${JSON.stringify(ts).slice(0, 80)} is neither an ISO 8601 date-time from 1970 on nor epoch milliseconds`;
  return null;
}
