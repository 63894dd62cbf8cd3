import type { CollectionsRepo } from '../catalog/collections.js';
import type { ProjectsRepo } from '../catalog/projects.js';
import type { SchemaService } from './schema-service.js';

/** What the totals read (the services bag satisfies it). */
export interface StatsDeps {
  schema: Pick<SchemaService, 'collectionStats'>;
  collections: Pick<CollectionsRepo, 'list' | 'listByProject'>;
  projects: Pick<ProjectsRepo, 'list'>;
}

/**
 * Sizes and counts the serializers show, derived from the file manifests and schema versions:
 * `storage_gb` is the documents as sent (uncompressed) in the collection files, in GB (10^9 bytes);
 * `schema_count` the live schema versions in every state.
 */
export interface SchemaTotals {
  storage_gb: number;
  schema_count: number;
}

const GB = 1e9;

function round(gb: number): number {
  return Math.round(gb * 1e6) / 1e6;
}

/** Totals of one collection (Collection.storage_gb, Collection.schema_count). */
export function collectionTotals(s: StatsDeps, collectionId: string): SchemaTotals {
  const t = s.schema.collectionStats(collectionId);
  return { storage_gb: round(t.docBytes / GB), schema_count: t.schemaCount };
}

/** Totals of a source over its collections (Source.storage_gb, Source.schema_count). */
export function sourceTotals(s: StatsDeps, sourceId: string): SchemaTotals {
  let bytes = 0;
  let count = 0;
  for (const c of s.collections.list(sourceId)) {
    const t = s.schema.collectionStats(c.id);
    bytes += t.docBytes;
    count += t.schemaCount;
  }
  return { storage_gb: round(bytes / GB), schema_count: count };
}

/** Collection-file storage across a team's projects (Team.storage_gb). */
export function teamStorageGb(s: StatsDeps, teamId: string): number {
  let gb = 0;
  for (const p of s.projects.list(teamId)) gb += projectStorageGb(s, p.id);
  return round(gb);
}

/** Collection-file storage of a project (Project.storage_gb). */
export function projectStorageGb(s: StatsDeps, projectId: string): number {
  let bytes = 0;
  for (const c of s.collections.listByProject(projectId)) bytes += s.schema.collectionStats(c.id).docBytes;
  return round(bytes / GB);
}
