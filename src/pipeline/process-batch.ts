import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Assignment, Sighting } from '../schema/book.js';
import type { FingerprintRules } from '../schema/rules.js';
import type { Shape } from '../schema/shape.js';
import { buildFiles } from './build-files.js';
import { decodeEntries, type BatchEntry, type DecodedRows } from '../records/decode.js';
import { FieldLayouts, SpeculativeFields } from './speculative-fields.js';
import type { FileSpec } from './file-plan.js';
import type { BatchResult, WrittenFile } from '../commit/batch-commit.js';
import { createFingerprintStage, type FingerprintedRows, type FingerprintStage } from './fingerprint-stage.js';
import { matchedEventTime, RecordTemplates, TEMPLATE_BUDGET_BYTES } from './record-templates.js';
import {
  collectionInput,
  removeViewFiles,
  transformViewsStage,
  type RunScript,
  type ViewTask,
} from '../transform/view-stage.js';
import type { BuiltFile } from './build-files.js';
import { consumersForBatch } from './output-consumer.js';
import { OUTPUT_CONSUMERS } from './output-consumers.js';
import { SlotCapture } from '../transform/record-slots.js';

/**
 * One pipeline task = one spool lease: decode → fingerprint → resolve shapes to versions (the main
 * thread owns versions, asked through `resolve`) → build columns → Parquet files. Files are written
 * under a temporary name and renamed, so a file with its final name is always complete; a failure
 * removes what this task wrote before it rethrows.
 */

export interface BatchTask {
  collectionId: string;
  projectId: string;
  rules: FingerprintRules;
  entries: BatchEntry[];
  firstSeq: number;
  lastSeq: number;
  /** Absolute directory of the collection's files. */
  filesDir: string;
  /** Views the collection feeds, parents first (none: the view stage is skipped). */
  views?: ViewTask[];
}

/** Messages from a task to the resolver. */
export type ResolveRequest =
  | {
      type: 'sightings';
      sightings: Sighting[] /** [refusal code, rows] of rows that have no shape. */;
      refused: Array<[number, number]>;
    }
  | { type: 'shapes'; shapes: Array<{ key: number; shape: Shape; sample: string | null }> };

/** The resolver's answers: which shapes it needs described, or the plan. */
export type ResolveReply =
  | { type: 'need'; keys: number[] }
  | { type: 'plan'; assign: Array<[number, string | null, string]>; files: FileSpec[] };

export type Resolver = (req: ResolveRequest) => Promise<ResolveReply>;

export type { BatchResult, WrittenFile } from '../commit/batch-commit.js';

/** Path of a batch's file within the collection directory. */
export function fileName(dir: string, firstSeq: number): string {
  return `${dir}/${firstSeq}.parquet`;
}

/**
 * `createBatchProcessor()` returns `processBatch(task, resolve)`. It keeps one fingerprint stage,
 * one set of field layouts and one set of record templates per (collection, rules), so path caches,
 * the last plan's layout and learned templates survive across batches of the same collection.
 * `speculate: false` builds every file from held records and `templates: false` parses every
 * record; `slots: false` sends views every record as text to parse (tests compare the ways).
 */
export function createBatchProcessor(
  opts: { speculate?: boolean; templates?: boolean; slots?: boolean; runScript?: RunScript } = {},
) {
  const speculate = opts.speculate ?? true;
  const useTemplates = opts.templates ?? true;
  const stages = new Map<string, { stage: FingerprintStage; layouts: FieldLayouts; templates: RecordTemplates }>();
  // Memory the templates of every stage may take together (given back when the stages go).
  const budget = { bytes: TEMPLATE_BUDGET_BYTES };
  const stageFor = (task: BatchTask) => {
    const probe = createFingerprintStageKey(task);
    let entry = stages.get(probe);
    if (!entry) {
      if (stages.size >= 256) {
        stages.clear();
        budget.bytes = TEMPLATE_BUDGET_BYTES;
      }
      entry = {
        stage: createFingerprintStage(task.rules),
        layouts: new FieldLayouts(),
        templates: new RecordTemplates(budget),
      };
      stages.set(probe, entry);
    }
    return entry;
  };

  return async function processBatch(task: BatchTask, resolve: Resolver): Promise<BatchResult> {
    const { stage, layouts, templates } = stageFor(task);
    // Decode, fingerprint and (for shapes whose file is known from the last plan) fill field
    // columns record by record; only the records of other shapes are held until the plan. A
    // record matching a learned template is never parsed (record-templates.ts).
    const spec = speculate ? new SpeculativeFields(layouts) : null;
    let fingerprints: ReturnType<FingerprintStage['begin']> | undefined;
    // A view reading the collection gets its templated records as slot values, not text to parse
    // (record-slots.ts); only batches with such a view pay for capturing them.
    const capturing =
      useTemplates &&
      opts.slots !== false &&
      opts.runScript !== undefined &&
      (task.views ?? []).some((v) => v.parentViewId === null);
    let slots: SlotCapture | null = null;
    const rows = decodeEntries(task.entries, (rows) => {
      const batch = (fingerprints = stage.begin(rows.count));
      const values = templates.values;
      const capture = (slots = capturing ? new SlotCapture(rows.count) : null);
      return {
        bytes: useTemplates
          ? (row, body, s, e, received) => {
              const t = templates.match(body, s, e);
              if (t === null) return false;
              rows.ts[row] = matchedEventTime(t, values, body, received);
              batch.addKnown(row, t.key, t.hash, received);
              spec?.takeMatch(t, values, body, s, e);
              capture?.take(row, t, values, body, s, e);
              // Not held either way: a record a file needs later is parsed from its bytes then.
              return true;
            }
          : undefined,
        record: (row, record, received) => {
          const key = batch.add(row, record, received);
          if (useTemplates && templates.wants(key))
            templates.learn(rows.bodies[rows.entry[row]!]!, rows.start[row]!, rows.end[row]!, key, batch.lastHash());
          return spec === null || !spec.take(key, record);
        },
      };
    });
    templates.release();
    const fr = fingerprints!.result();
    const refused: Array<[number, number]> = [];
    for (const g of fr.groups.values()) if (g.key < 0) refused.push([g.key, g.rows]);
    let reply = await resolve({ type: 'sightings', sightings: stage.sightings(fr), refused });
    if (reply.type === 'need') {
      const shapes = reply.keys.map((key) => {
        const g = fr.groups.get(key);
        if (!g) throw new Error(`resolver asked for unknown shape key ${key}`);
        return { key, ...stage.describeGroup(rows, g) };
      });
      reply = await resolve({ type: 'shapes', shapes });
    }
    if (reply.type !== 'plan') throw new Error('resolver did not answer with a plan');
    const assign = new Map<number, Assignment>(
      reply.assign.map(([k, versionId, shapeHash]) => [k, { versionId, shapeHash }]),
    );
    const views = task.views ?? [];
    const runScript = opts.runScript;
    if (views.length === 0 || !runScript)
      return { rows: rows.count, files: collectionFilesStage(task, rows, fr, reply, assign, spec, layouts), views: [] };
    const consumers = await consumersForBatch(OUTPUT_CONSUMERS, views);
    // The views start first: once a sandbox process has the records, it transforms them while this
    // thread builds the collection files (docs/architecture.md, "Stages").
    let handedOver!: () => void;
    const sent = new Promise<void>((resolve) => (handedOver = resolve));
    const onOutput = consumers.onOutput;
    const capture = slots as SlotCapture | null;
    try {
      const base = collectionInput(rows, (r) => assign.get(fr.keys[r]!)?.versionId ?? null, capture ?? undefined);
      const viewsStage = transformViewsStage({
        base,
        views,
        firstSeq: task.firstSeq,
        run: (batch, view) => runScript(batch, view, handedOver),
        onOutput,
      });
      const settled = viewsStage.then(
        (outcomes) => ({ ok: true as const, outcomes }),
        (err: unknown) => ({ ok: false as const, err }),
      );
      await Promise.race([sent, settled]);
      let written: WrittenFile[];
      try {
        written = collectionFilesStage(task, rows, fr, reply, assign, spec, layouts);
      } catch (err) {
        // The views' files have no batch to commit with (a stage that rejected removed its own).
        const r = await settled;
        if (r.ok) removeViewFiles((id) => views.find((v) => v.viewId === id)!.dir, r.outcomes);
        throw err;
      }
      const r = await settled;
      if (!r.ok) {
        // Only the sandbox breaking its own contract gets here (a view's failure is an outcome);
        // the stage removed its view files.
        for (const w of written) rmSync(join(task.filesDir, w.path), { force: true });
        throw r.err;
      }
      const outcomes = r.outcomes;
      const outputs = consumers.outputs();
      return { rows: rows.count, files: written, views: outcomes, ...(outputs ? { outputs } : {}) };
    } finally {
      // Every sandbox call over the batch has answered: its slot values' buffers go to the next batch.
      capture?.release();
    }
  };
}

/** Build the collection's files of the batch from its plan and write them. */
function collectionFilesStage(
  task: BatchTask,
  rows: DecodedRows,
  fr: FingerprintedRows,
  plan: Extract<ResolveReply, { type: 'plan' }>,
  assign: Map<number, Assignment>,
  spec: SpeculativeFields | null,
  layouts: FieldLayouts,
): WrittenFile[] {
  const built = buildFiles(rows, fr, plan.files, assign, (f) => spec?.buildersFor(f) ?? null);
  layouts.learn(plan.files);
  return writeCollectionFilesStage(task, built);
}

/** Write the built collection files (temporary name, then rename); on failure remove what was written. */
function writeCollectionFilesStage(task: BatchTask, built: readonly BuiltFile[]): WrittenFile[] {
  const written: WrittenFile[] = [];
  try {
    for (const b of built) {
      const rel = fileName(b.spec.dir, task.firstSeq);
      const abs = join(task.filesDir, rel);
      mkdirSync(join(task.filesDir, b.spec.dir), { recursive: true });
      writeFileSync(abs + '.tmp', b.bytes);
      renameSync(abs + '.tmp', abs);
      written.push({
        kind: b.spec.kind,
        dir: b.spec.dir,
        versionId: b.spec.versionId,
        shapeHash: b.spec.shapeHash,
        path: rel,
        rows: b.rows,
        bytes: b.bytes.byteLength,
        docBytes: b.docBytes,
        minTs: b.minTs,
        maxTs: b.maxTs,
        counts: b.counts,
      });
    }
  } catch (err) {
    for (const w of written) rmSync(join(task.filesDir, w.path), { force: true });
    throw err;
  }
  return written;
}

function createFingerprintStageKey(task: BatchTask): string {
  return task.collectionId + '\u0000' + JSON.stringify(task.rules);
}
