import type { Database } from 'lmdb';
import type { Store } from '../store/db.js';
import { Table } from '../store/table.js';
import type { ShapeRecord, UnclassifiedOverflow } from './book.js';
import type { SchemaVersionRecord } from './versions.js';

/**
 * Which collection files one batch writes (spec: schema_writer_limit). Versions get one file each,
 * most rows first, up to the limit (past it, the smaller versions share one `mixed` file whose rows
 * carry their version id). Unclassified shapes get the same number of files, most rows first; rows
 * of the shapes past that budget, and refused rows, go to one `overflow` file and cannot later be
 * linked to a version.
 */
export type FileKind = 'version' | 'mixed' | 'unclassified' | 'overflow';

/** One collection file as committed: what a replay, the docs endpoint and storage sizes read. */
export interface FileManifest {
  /** Path relative to the collection's files directory, e.g. `sch_…/17.parquet`. */
  id: string;
  collection_id: string;
  project_id: string;
  kind: FileKind;
  version_id: string | null;
  shape_hash: string | null;
  first_seq: number;
  last_seq: number;
  rows: number;
  /** Parquet file size, bytes. */
  bytes: number;
  /** Documents as sent, bytes (uncompressed size; storage_gb is the sum of these). */
  doc_bytes: number;
  min_ts: number;
  max_ts: number;
  created_at: string;
  /** What the file's rows added to the collection's counts (absent on files written before it existed). */
  counts?: FileCounts;
}

/**
 * Rows a file added to each count, so removing the file (retention) takes exactly them back:
 * version `row_count`s, shape `rows`, and the overflow total (rows of unrecorded shapes and rows
 * refused classification).
 */
export interface FileCounts {
  versions: Record<string, number>;
  shapes: Record<string, number>;
  overflow: number;
}

/** Per-collection schema bookkeeping outside the versions themselves. */
export interface SchemaMeta {
  /** rules.ts `rulesKey` the stored shapes were fingerprinted under. */
  rules_key: string;
  /** Unclassified rows whose shapes were past the recorded-shape cap (book.ts UNCLASSIFIED_SHAPE_CAP). */
  unclassified_overflow?: UnclassifiedOverflow;
}

/**
 * A spool entry the pipeline could not process however it was retried (e.g. a worker error it
 * keeps hitting on this input): set aside with the error, so the collection's later records flow.
 * The body is kept exactly as sent, for inspection or a manual replay.
 */
export interface UnprocessableEntry {
  /** The spool sequence number, as a decimal string. */
  id: string;
  collection_id: string;
  project_id: string;
  seq: number;
  received_at: number;
  records: number;
  format: 'ndjson' | 'array' | 'object';
  body: Uint8Array;
  /** The last error message. */
  error: string;
  /** Attempts made on this entry alone before it was set aside. */
  attempts: number;
  set_aside_at: string;
}

/**
 * LMDB tables of the schema pipeline, all scoped by collection id: `schema_versions`,
 * `schema_shapes`, `collection_files` (manifests), `schema_meta` and `pipeline_unprocessable`.
 */
export class SchemaStore {
  readonly versions: Table<SchemaVersionRecord>;
  readonly shapes: Table<ShapeRecord>;
  readonly files: Table<FileManifest>;
  readonly meta: Database<SchemaMeta, string>;
  readonly unprocessable: Table<UnprocessableEntry>;

  constructor(readonly store: Store) {
    this.versions = new Table<SchemaVersionRecord>(store, 'schema_versions');
    this.shapes = new Table<ShapeRecord>(store, 'schema_shapes');
    this.files = new Table<FileManifest>(store, 'collection_files');
    this.meta = store.db<SchemaMeta, string>('schema_meta');
    this.unprocessable = new Table<UnprocessableEntry>(store, 'pipeline_unprocessable');
  }

  /** Stage the removal of everything a collection holds here (inside a transaction). */
  removeCollection(collectionId: string): void {
    for (const t of [this.versions, this.shapes, this.files, this.unprocessable] as Array<Table<{ id: string }>>) {
      for (const r of t.list(collectionId)) void t.remove(collectionId, r.id);
    }
    void this.meta.remove(collectionId);
  }
}
