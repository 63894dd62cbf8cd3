import { join } from 'node:path';
import type { SchemaService } from '../schema/schema-service.js';
import type { ViewCatalog } from './view-catalog.js';
import type { ViewFileManifest, ViewRecord, ViewTransformRecord } from './view-records.js';
import type { ViewInput } from './view-stage.js';
import { readViewFile, viewRowsInput } from './view-file-rows.js';

/** A file a backfill transforms: a collection file, or a file of the parent view. */
export interface BackfillFile {
  /** Its manifest id (the place in the transform's done list). */
  id: string;
  first_seq: number;
  last_seq: number;
  rows: number;
}

/** Where a transform's backfill reads (docs/views.md, "Backfill"). */
export interface BackfillSource {
  /** What a file is, for messages: "collection file", "file of parent view viw_…". */
  readonly what: string;
  /** The files that are the transform's backfill — the records it did not get live. */
  due(t: ViewTransformRecord): BackfillFile[];
  /** A file's records as the transform's input. */
  read(file: BackfillFile): Promise<ViewInput>;
}

/**
 * A collection view's backfill: the collection files whose batches came before the transform first
 * ran live (`live_from_seq`; every file while no live batch has run it).
 */
export function collectionFiles(schema: SchemaService, view: ViewRecord): BackfillSource {
  const dir = schema.filesDir({ project_id: view.project_id, id: view.root_collection_id });
  return {
    what: 'collection file',
    due: (t) => {
      const cutoff = t.live_from_seq ?? Infinity;
      return schema.manifests(view.root_collection_id).filter((m) => m.first_seq < cutoff);
    },
    async read(m) {
      const reader = await schema.fileReader();
      const rows = await reader.docs({ paths: [join(dir, m.id)], limit: m.rows + 1, sort: 'asc' });
      return {
        texts: rows.map((r) => r.doc),
        ts: Float64Array.from(rows, (r) => r.tsMs),
        // The receive time is not kept in collection files: ctx.received_at reads the event time.
        received: Float64Array.from(rows, (r) => r.tsMs),
        seq: Float64Array.from(rows, (r) => r.seq),
        versions: rows.map((r) => r.versionId),
      };
    },
  };
}

/**
 * A view of a view's backfill: its parent's committed files that it did not get live — the parent's
 * batch files from batches before the child first ran live (`live_from_seq`), and every file the
 * parent wrote outside live batches (its own backfill, or a join's output), which no live batch
 * brings to the child. Read back from Parquet as the parent's output rows.
 */
export function parentViewFiles(views: ViewCatalog, schema: SchemaService, parent: ViewRecord): BackfillSource {
  const dir = views.viewDir(parent);
  return {
    what: `file of parent view ${parent.id}`,
    due: (t) => {
      const cutoff = t.live_from_seq ?? Infinity;
      return views.store.filesOf(parent.id).filter((m) => !fedLive(m) || m.first_seq < cutoff);
    },
    async read(m) {
      const rows = await readViewFile(await schema.fileReader(), join(dir, m.id), m.rows);
      // The parent's schema as committed now: it is fixed once the parent stored output.
      return viewRowsInput(rows, views.store.byId(parent.id)?.output_schema ?? parent.output_schema);
    },
  };
}

/** Whether a live batch that wrote this file also fed the views reading its view. */
function fedLive(m: ViewFileManifest): boolean {
  return m.origin === 'batch';
}
