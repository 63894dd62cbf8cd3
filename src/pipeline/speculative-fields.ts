import type { SlotValues, Template } from '../records/template-slots.js';
import { createFieldExtractor, type FieldBuilder, type FieldExtractor } from './field-extractor.js';
import type { FieldColumn, FileSpec } from './file-plan.js';
import { applyPlan, fieldPlan } from './template-fields.js';

/**
 * Typed field columns filled while a batch is decoded, before its plan is known, so each parsed
 * record is used once and let go. The plan of a collection rarely changes between batches: a shape
 * seen before goes to the same file (version directory) with the same columns. `FieldLayouts`
 * remembers, per shape key, where the last plan put it; `SpeculativeFields` extracts each record
 * of a remembered shape into that file's builders as it is decoded.
 *
 * Nothing is trusted: a planned file uses the builders only when they hold exactly its rows, in
 * batch order, read with its columns — the same shape keys, no more and no fewer, into the same
 * directory with the same column list. Any other file is built from the records again (re-parsed
 * from their bytes where they were let go), as it would be without speculation.
 *
 * Measured on 2 cores (bench/pipeline): records held through a 50,000-record batch are copied by
 * each scavenge and promoted; dropping them after one use removes most of that GC work.
 */

/** Where a shape key's rows went in the last plan. */
interface Layout {
  /** The file's directory and columns as one string (what must match in the next plan). */
  id: string;
  columns: readonly FieldColumn[];
  /** Rows of the whole file last time: the initial size of its builders. */
  rows: number;
}

/** Remembered layouts past this many shape keys are forgotten (they are only hints). */
const MAX_LAYOUTS = 100_000;

const layoutId = (dir: string, columns: readonly FieldColumn[]) => dir + '\u0000' + JSON.stringify(columns);

/** Per collection and rule set (lives with its fingerprint stage): the last plan's layout per shape key. */
export class FieldLayouts {
  private readonly byKey = new Map<number, Layout>();

  get(key: number): Layout | undefined {
    return this.byKey.get(key);
  }

  /** Remember where `files` put every shape key. */
  learn(files: readonly FileSpec[]): void {
    if (this.byKey.size > MAX_LAYOUTS) this.byKey.clear();
    for (const f of files) {
      const layout: Layout = { id: layoutId(f.dir, f.columns), columns: f.columns, rows: f.rows };
      for (const key of f.keys) if (key >= 0) this.byKey.set(key, layout);
    }
  }
}

interface Group {
  layout: Layout;
  keys: Set<number>;
  rows: number;
  extractor: FieldExtractor;
}

/** One batch's speculative builders. */
export class SpeculativeFields {
  private readonly groups = new Map<string, Group>();

  constructor(private readonly layouts: FieldLayouts) {}

  /**
   * Extract `record` (shape `key`) into the builders of the file its shape went to last time.
   * True when done (the record is no longer needed), false for a shape without a layout.
   */
  take(key: number, record: unknown): boolean {
    const group = this.groupOf(key);
    if (group === null) return false;
    group.extractor.extract(record);
    return true;
  }

  /**
   * The same for a record matched by template `t` (record-templates.ts): its values are read from
   * `values` and its bytes `b[s, e)`, without parsing unless a column needs the parsed record.
   */
  takeMatch(t: Template, values: SlotValues, b: Buffer, s: number, e: number): boolean {
    const group = this.groupOf(t.key);
    if (group === null) return false;
    const plan = fieldPlan(t, group.layout.id, group.layout.columns);
    if (plan !== null) applyPlan(plan, group.extractor.builders, values, b);
    else group.extractor.extract(JSON.parse(b.toString('utf8', s, e)));
    return true;
  }

  /** The group a row of shape `key` is taken into (counted), or null without a layout. */
  private groupOf(key: number): Group | null {
    const layout = key >= 0 ? this.layouts.get(key) : undefined;
    if (layout === undefined) return null;
    let group = this.groups.get(layout.id);
    if (group === undefined) {
      group = { layout, keys: new Set(), rows: 0, extractor: createFieldExtractor(layout.columns, layout.rows) };
      this.groups.set(layout.id, group);
    }
    group.keys.add(key);
    group.rows++;
    return group;
  }

  /** The builders holding exactly `spec`'s rows with its columns, or null (build it from the records). */
  buildersFor(spec: FileSpec): FieldBuilder[] | null {
    const group = this.groups.get(layoutId(spec.dir, spec.columns));
    if (group === undefined || group.rows !== spec.rows || group.keys.size !== spec.keys.length) return null;
    for (const key of spec.keys) if (!group.keys.has(key)) return null;
    return group.extractor.builders;
  }
}
