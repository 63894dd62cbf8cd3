/** One record read from an input file, before it is checked. */
export interface InputRecord {
  /** The record as one line of JSON (NDJSON as read; array elements with their line breaks made spaces; CSV rows as JSON). */
  text: string;
  /** 1-based line of the file where the record starts (CSV: the row's line, header counted). */
  line: number;
  /** Bytes of the input read up to the end of this record (progress). */
  offset: number;
  /** Set when the reader already knows the record cannot be sent (too long, CSV row that does not parse). */
  refusal?: string;
}

/** The server's limit on one NDJSON line (docs/ingest.md, "Limits"). */
export const MAX_RECORD_BYTES = 1024 * 1024;
