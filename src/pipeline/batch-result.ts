import type { FileCounts } from '../schema/schema-store.js';
import type { ViewOutcome } from '../transform/view-stage.js';
import type { TaskCost } from './failures.js';
import type { FileKind } from './file-plan.js';

/**
 * What one pipeline task returns (process-batch.ts): kept apart from the worker's code so the commit
 * seam and the stages reading a result depend on its shape only.
 */

export interface WrittenFile {
  kind: FileKind;
  dir: string;
  versionId: string | null;
  shapeHash: string | null;
  /** Path relative to the collection's files directory. */
  path: string;
  rows: number;
  bytes: number;
  docBytes: number;
  minTs: number;
  maxTs: number;
  counts: FileCounts;
}

export interface BatchResult {
  rows: number;
  files: WrittenFile[];
  /** One per task view, in task order. */
  views: ViewOutcome[];
  /**
   * Each output consumer's parts, by consumer name: one per view it consumes that produced output,
   * in view order (absent: no part at all). Read with output-consumer.ts `consumerOutputs`.
   */
  outputs?: Record<string, unknown[]>;
  /** What the task cost its worker (set by the worker entry; absent when run in-process). */
  cost?: TaskCost;
}
