import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Logger } from '../log.js';

/**
 * Collection files on disk that no commit names (docs/architecture.md, "The commit"): the partial
 * output of a batch a crash interrupted, and the directories of destroyed collections.
 */

/** Suffix of a destroyed collection's files directory while it is being removed (start-up removes leftovers). */
const DELETING_SUFFIX = '.deleting-';

/**
 * Remove files under `root` (`DATA_DIR/files/<project>/<collection>/…`) that `committed(collection)`
 * does not name: the partial output of a batch interrupted by a crash (its spool entries replay),
 * `.tmp` leftovers, and the directories of destroyed collections a crash left half removed.
 * Returns how many files and directories were removed. Run before the pipeline starts.
 */
export function sweepOrphans(root: string, committed: (collectionId: string) => ReadonlySet<string>): number {
  if (!existsSync(root)) return 0;
  let removed = 0;
  for (const project of readdirSync(root)) {
    for (const collection of safeList(join(root, project))) {
      const dir = join(root, project, collection);
      if (collection.includes(DELETING_SUFFIX)) {
        // A destroyed collection's directory a crash left behind.
        rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
        removed++;
        continue;
      }
      const known = committed(collection);
      for (const file of walk(dir)) {
        const rel = relative(dir, file);
        if (!known.has(rel)) {
          rmSync(file, { force: true });
          removed++;
        }
      }
    }
  }
  return removed;
}

/**
 * Remove a destroyed collection's files directory. Moved aside first: a worker finishing a
 * fenced-off batch may still write into the directory; whatever it leaves is swept at start-up.
 */
export function removeCollectionFiles(dir: string, log: Logger, collectionId: string): void {
  const aside = `${dir}${DELETING_SUFFIX}${Date.now()}`;
  try {
    renameSync(dir, aside);
  } catch {
    // No files yet (or already moved): nothing to move.
  }
  rmSync(aside, { recursive: true, force: true, maxRetries: 5 });
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  } catch (err) {
    // A fenced-off batch still writing: its commit aborts and removes its files; the start-up
    // sweep removes whatever is left.
    log.warn(
      { err, collection_id: collectionId },
      'files of a destroyed collection were still being written; left for the sweep',
    );
  }
}

function safeList(dir: string): string[] {
  try {
    return statSync(dir).isDirectory() ? readdirSync(dir) : [];
  } catch {
    return [];
  }
}

function* walk(dir: string): Iterable<string> {
  for (const name of safeList(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p);
    else yield p;
  }
}
