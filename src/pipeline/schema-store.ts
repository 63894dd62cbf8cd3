import type { Database } from 'lmdb';
import type { Store } from '../store/db.js';
import { Table } from '../store/table.js';
import type { ShapeRecord } from '../schema/book.js';
import type { SchemaVersionRecord } from '../schema/versions.js';
import type { FileKind } from './file-plan.js';

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
}

/** Per-collection schema bookkeeping outside the versions themselves. */
export interface SchemaMeta {
  /** rules.ts `rulesKey` the stored shapes were fingerprinted under. */
  rules_key: string;
}

/**
 * LMDB tables of the schema pipeline, all scoped by collection id: `schema_versions`,
 * `schema_shapes`, `collection_files` (manifests) and `schema_meta`.
 */
export class SchemaStore {
  readonly versions: Table<SchemaVersionRecord>;
  readonly shapes: Table<ShapeRecord>;
  readonly files: Table<FileManifest>;
  readonly meta: Database<SchemaMeta, string>;

  constructor(readonly store: Store) {
    this.versions = new Table<SchemaVersionRecord>(store, 'schema_versions');
    this.shapes = new Table<ShapeRecord>(store, 'schema_shapes');
    this.files = new Table<FileManifest>(store, 'collection_files');
    this.meta = store.db<SchemaMeta, string>('schema_meta');
  }

  /** Stage the removal of everything a collection holds here (inside a transaction). */
  removeCollection(collectionId: string): void {
    for (const t of [this.versions, this.shapes, this.files] as Array<Table<{ id: string }>>) {
      for (const r of t.list(collectionId)) void t.remove(collectionId, r.id);
    }
    void this.meta.remove(collectionId);
  }
}
