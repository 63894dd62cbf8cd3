import type { ShapeRecord, UnclassifiedOverflow } from './book.js';
import { detectProposals, keysLookLikeData, type SchemaProposal } from './proposals.js';
import { countShapesUnder, reshape } from './rekey.js';
import { Fingerprinter } from './fingerprint.js';
import { rulesKey, type FingerprintRules } from './rules.js';

/** spec: Collection schema report (`object: collection_schema_report`). */
export interface SchemaReport {
  object: 'collection_schema_report';
  collection_id: string;
  rules: { opaque_paths: string[][]; tracked_paths: string[][]; max_depth: number };
  shapes: { before: number; after: number };
  proposals: SchemaProposal[];
  keys_look_like_data: boolean;
  /**
   * Shapes past the pools and their rows. `shapes` is exact while every such shape is recorded
   * (`shapes_exact`); past book.ts UNCLASSIFIED_SHAPE_CAP it is a lower bound, and `rows` still
   * counts every row (the unrecorded shapes' rows went to `_overflow`).
   */
  unclassified: { shapes: number; rows: number; shapes_exact: boolean };
}

/**
 * The report on `shapes` (the collection's stored distinct shapes, under `current` rules) read
 * under `rules`: equal to `current` for GET schema_report, the sent rules for schema_preview. Pure:
 * nothing is changed.
 */
export function buildReport(args: {
  collectionId: string;
  current: FingerprintRules;
  rules: FingerprintRules;
  shapes: readonly ShapeRecord[];
  /** Unclassified rows past the shape cap (not in `shapes`). */
  overflow?: UnclassifiedOverflow;
  readsInside?: (path: string[]) => boolean;
}): SchemaReport {
  const { current, rules, shapes } = args;
  const same = rulesKey(current) === rulesKey(rules);
  const before = shapes.length;
  // Under other rules, the detector reads the shapes as they would be re-described.
  const read = same
    ? shapes
    : (() => {
        const fp = new Fingerprinter(rules);
        const byHash = new Map<string, { entries: ShapeRecord['entries']; sample: string | null }>();
        for (const s of shapes) {
          const shape = reshape(fp, s);
          if (!byHash.has(shape.hash)) byHash.set(shape.hash, { entries: shape.entries, sample: s.sample });
        }
        return [...byHash.values()];
      })();
  let unclassifiedShapes = 0;
  let unclassifiedRows = 0;
  for (const s of shapes) {
    if (s.version_id === null) {
      unclassifiedShapes++;
      unclassifiedRows += s.rows;
    }
  }
  return {
    object: 'collection_schema_report',
    collection_id: args.collectionId,
    rules: { opaque_paths: rules.opaquePaths, tracked_paths: rules.trackedPaths, max_depth: rules.maxDepth },
    shapes: { before, after: same ? before : read.length },
    proposals: detectProposals(read, rules, args.readsInside),
    keys_look_like_data: keysLookLikeData(read),
    unclassified: {
      shapes: unclassifiedShapes + (args.overflow?.shapes_min ?? 0),
      rows: unclassifiedRows + (args.overflow?.rows ?? 0),
      shapes_exact: (args.overflow?.rows ?? 0) === 0,
    },
  };
}

export { countShapesUnder };
