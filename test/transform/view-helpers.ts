import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Bool, Float64, Int32, Int64, TimestampMillisecond, Utf8, vectorFromArray, type Vector } from 'apache-arrow';
import { tableOf } from '../../src/schema/columns.js';
import { encodeParquet } from '../../src/schema/parquet-writer.js';
import type { OutputField, ViewFileManifest } from '../../src/transform/view-records.js';
import type { TestServer } from '../helpers/server.js';
import { createProject, createSource, ok } from '../catalog/helpers.js';

/** A project with a source and one collection; `views` is the project's views path. */
export async function viewSetup(srv: TestServer, name = 'Shop') {
  const project = await createProject(srv, name);
  const source = await createSource(srv, project.id, 'web');
  const collection = ok(
    await srv.post(`/v1/projects/${project.id}/collections`, { name: 'events', source_id: source.id }),
    201,
  );
  return { project, source, collection, views: `/v1/projects/${project.id}/views` };
}

export const SCRIPT = 'function transform(record) { return { name: String(record.name) }; }';

/** One row of a view file: event time, spool sequence, then the output values by field name. */
export interface FileRow {
  ts: number;
  seq: number;
  values: Record<string, unknown>;
}

/**
 * Write a view output file the way the pipeline does (columns `__ts`, `__seq`, `__row`, then one
 * per output field) and commit its manifest; returns the manifest.
 */
export async function writeViewFile(
  srv: TestServer,
  view: { id: string; project_id: string },
  fields: OutputField[],
  id: string,
  rows: FileRow[],
): Promise<ViewFileManifest> {
  const columns: Record<string, Vector> = {
    __ts: vectorFromArray(
      rows.map((r) => r.ts),
      new TimestampMillisecond('UTC'),
    ),
    __seq: vectorFromArray(
      rows.map((r) => BigInt(r.seq)),
      new Int64(),
    ),
    __row: vectorFromArray(
      rows.map((_, i) => i),
      new Int32(),
    ),
  };
  for (const f of fields) {
    const vals = rows.map((r) => r.values[f.name] ?? null);
    switch (f.type) {
      case 'number':
        columns[f.name] = vectorFromArray(vals as (number | null)[], new Float64());
        break;
      case 'boolean':
        columns[f.name] = vectorFromArray(vals as (boolean | null)[], new Bool());
        break;
      case 'date':
        columns[f.name] = vectorFromArray(vals as (number | null)[], new TimestampMillisecond('UTC'));
        break;
      case 'array':
        columns[f.name] = vectorFromArray(
          vals.map((v) => (v === null ? null : JSON.stringify(v))),
          new Utf8(),
        );
        break;
      case 'null':
        columns[f.name] = vectorFromArray(
          vals.map(() => null),
          new Utf8(),
        );
        break;
      default:
        columns[f.name] = vectorFromArray(vals as (string | null)[], new Utf8());
    }
  }
  const bytes = encodeParquet(tableOf(columns));
  const views = srv.sluice.services.views;
  const path = join(views.viewDir(view), id);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, bytes);
  const manifest: ViewFileManifest = {
    id,
    view_id: view.id,
    first_seq: Math.min(...rows.map((r) => r.seq)),
    last_seq: Math.max(...rows.map((r) => r.seq)),
    rows: rows.length,
    bytes: bytes.length,
    min_ts: Math.min(...rows.map((r) => r.ts)),
    max_ts: Math.max(...rows.map((r) => r.ts)),
    created_at: new Date().toISOString(),
    origin: 'batch',
  };
  await views.store.store.transaction(() => views.store.files.put(view.id, manifest));
  return manifest;
}
