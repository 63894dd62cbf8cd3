import type { BatchPlan, BookSettings, SchemaBook, Sighting } from '../schema/book.js';
import { planFiles, type FileSpec } from './file-plan.js';
import type { ResolveReply, ResolveRequest, Resolver } from './process-batch.js';

/**
 * The main thread's side of a task's resolve conversation, over one collection's book. It answers
 * with the shapes it needs described, then with the plan; the plan's records are kept in `plan`
 * for the commit — the book itself is untouched until the caller applies them.
 */
export interface BatchResolution {
  resolve: Resolver;
  /** Set once the plan has been answered. */
  plan(): BatchPlan | null;
}

/**
 * Rows an unclassified shape gets in its own `_unclassified/<hash>` file are counted on its record
 * (`unclassified_rows`: linked to the version it may get later) in the plan itself, so the plan
 * applied to the book ahead of the commit is exactly what commits. Counted at the commit instead,
 * it changed the plan there, and the book had to be reloaded and every later batch re-planned.
 */
function countUnclassifiedFileRows(plan: BatchPlan, files: readonly FileSpec[]): void {
  const fileRows = new Map<string, number>();
  for (const f of files)
    if (f.kind === 'unclassified' && f.shapeHash !== null)
      fileRows.set(f.shapeHash, (fileRows.get(f.shapeHash) ?? 0) + f.rows);
  if (fileRows.size === 0) return;
  plan.shapes.forEach((s, i) => {
    const rows = s.version_id === null ? fileRows.get(s.id) : undefined;
    if (rows) plan.shapes[i] = { ...s, unclassified_rows: (s.unclassified_rows ?? 0) + rows };
  });
}

export function createBatchResolution(args: {
  book: SchemaBook;
  settings: BookSettings & { schema_writer_limit: number };
  nowMs: () => number;
  newVersionId: () => string;
  typedColumns?: boolean;
  /** Awaited before the plan is made: the batch's turn to plan (collection-lane.ts). */
  planTurn?: () => Promise<void>;
  /** Called with the plan as soon as it is made (the runner applies it to the book ahead of the commit), and the milliseconds making it took. */
  onPlan?: (plan: BatchPlan, ms: number) => void;
}): BatchResolution {
  const { book, settings } = args;
  let sightings: Sighting[] = [];
  let refused: Array<[number, number]> = [];
  let plan: BatchPlan | null = null;

  const answer = async (): Promise<ResolveReply> => {
    await args.planTurn?.();
    const at = performance.now();
    plan = book.planBatch(sightings, args.nowMs(), settings, args.newVersionId);
    // Rows refused classification (not an object, too many fields) have no signature either:
    // they count with the unrecorded shapes' rows in the report's `unclassified.rows`.
    for (const [, rows] of refused) plan.overflow.rows += rows;
    const groupRows = new Map<number, number>(refused);
    for (const s of sightings) groupRows.set(s.key, s.rows);
    const drafts = new Map(plan.versions.map((v) => [v.id, v]));
    const shapes = new Map(plan.shapes.map((s) => [s.id, s]));
    const files = planFiles({
      groupRows,
      assign: plan.assign,
      writerLimit: settings.schema_writer_limit,
      typedColumns: args.typedColumns ?? true,
      versionFields: (id) => (drafts.get(id) ?? book.versions.get(id))?.fields ?? [],
      shapeFields: (hash) => {
        const s = shapes.get(hash) ?? book.shapes.get(hash);
        return s ? s.entries.map((e) => ({ path: e.path, type: e.type })) : [];
      },
    });
    countUnclassifiedFileRows(plan, files);
    const reply: ResolveReply = {
      type: 'plan',
      assign: [...plan.assign].map(([k, a]) => [k, a.versionId, a.shapeHash]),
      files,
    };
    args.onPlan?.(plan, performance.now() - at);
    return reply;
  };

  return {
    plan: () => plan,
    async resolve(req: ResolveRequest): Promise<ResolveReply> {
      if (req.type === 'sightings') {
        sightings = req.sightings;
        refused = req.refused;
        const hashOf = new Map(sightings.map((s) => [s.key, s.hash]));
        // A key not cached but whose hash the book already holds needs no description.
        const need = book.unknownKeys(hashOf.keys()).filter((k) => !book.shapes.has(hashOf.get(k)!));
        return need.length > 0 ? { type: 'need', keys: need } : answer();
      }
      const byKey = new Map(req.shapes.map((s) => [s.key, s]));
      sightings = sightings.map((s) => {
        const d = byKey.get(s.key);
        return d ? { ...s, shape: d.shape, sample: d.sample } : s;
      });
      return answer();
    },
  };
}
