import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { CommitParticipant } from '../commit/batch-commit.js';
import type { SchemaService } from './schema-service.js';
import type { FileManifest } from './schema-store.js';

interface SchemaStaged {
  manifests: FileManifest[];
  /** The commit changed the plan (identity limit reached, a hand settle). */
  adjusted: boolean;
}

/**
 * Schema on the commit seam: versions, shapes and collection-file manifests are staged in the
 * spool's transaction. Plans are applied to the book ahead of the commit (the next batch of the
 * collection plans against them); when the commit had to change the plan, the book no longer
 * matches what is committed, so it is reloaded and batches planned meanwhile run again.
 */
export function schemaCommitParticipant(schema: SchemaService): CommitParticipant<SchemaStaged> {
  return {
    name: 'schema',
    stage({ collection, plan, result, lease, book }) {
      const versions = [...plan.versions];
      const manifests = schema.stageCommit(
        collection,
        plan,
        result.files,
        { first: lease.firstSeq, last: lease.lastSeq },
        book,
      );
      const adjusted = plan.versions.some((v, i) => v !== versions[i]);
      return { manifests, adjusted };
    },
    applyCommitted({ collection, plan, book }, staged) {
      schema.applyCommitted(collection, plan, staged.manifests, book, true);
      if (staged.adjusted) schema.invalidate(collection.id);
    },
    abandon({ collection, result }) {
      if (!result) return;
      const dir = schema.filesDir(collection);
      for (const f of result.files) rmSync(join(dir, f.path), { force: true });
    },
  };
}
