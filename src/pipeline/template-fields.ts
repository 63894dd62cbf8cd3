import type { BoolColumn, Float64Column, StringColumn } from '../schema/columns.js';
import {
  K_ARRAY,
  K_BOOLEAN,
  K_NUMBER,
  K_STRING,
  pathKey,
  stringValue,
  type SlotValues,
  type Template,
} from '../records/template-slots.js';
import { jsonText, type FieldBuilder } from './field-extractor.js';
import type { FieldColumn } from './file-plan.js';

/**
 * Field columns filled straight from a matched record's bytes (record-templates.ts): per
 * (template, column list) a plan says which slot each column reads and how, computed once. The
 * values pushed are the ones the compiled extractor (field-extractor.ts) would push for the parsed
 * record: the value when its type is the column's, else null.
 */

const OP_NULL = 0;
const OP_NUMBER = 1;
const OP_STRING = 2;
const OP_BOOLEAN = 3;
/** A JSON column over an array of scalars: its JSON.stringify text, rebuilt from the values. */
const OP_ARRAY = 4;
/** A JSON column over an array of objects or arrays (a K_ARRAY slot): its bytes, when they are its text. */
const OP_NESTED = 5;
/** A JSON column over an empty object: `{}`. */
const OP_EMPTY_OBJECT = 6;

export interface FieldPlan {
  ops: Uint8Array;
  slots: Int32Array;
  /** OP_ARRAY columns: the array's element slots (-1: null). */
  arrays: Array<readonly number[] | null>;
  kinds: Uint8Array;
}

/**
 * The plan for `columns` over `t`'s values, or null when a JSON column reads a non-empty object or a
 * scalar (an object not entered, a field of several types): its text is JSON.stringify's of the
 * parsed value, not the bytes sent, so such records are parsed. Arrays of scalars are rebuilt;
 * arrays of objects or arrays are their bytes when the match found them written as JSON.stringify
 * writes them, else parsed and stringified on their own.
 */
function planOf(t: Template, columns: readonly FieldColumn[]): FieldPlan | null {
  const slotOf = new Map<string, number>();
  t.paths.forEach((p, slot) => slotOf.set(p, slot));
  const ops = new Uint8Array(columns.length);
  const slots = new Int32Array(columns.length).fill(-1);
  const arrays: Array<readonly number[] | null> = columns.map(() => null);
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i]!;
    const path = pathKey(c.segments);
    const slot = slotOf.get(path);
    if (slot !== undefined && t.kinds[slot] === K_ARRAY) {
      // Any other column type reads an array as null.
      ops[i] = c.type === 'json' ? OP_NESTED : OP_NULL;
      slots[i] = slot;
      continue;
    }
    if (c.type === 'json' && t.emptyObjects.has(path)) {
      ops[i] = OP_EMPTY_OBJECT;
      continue;
    }
    const items = t.arrays.get(path);
    if (items !== undefined) {
      // Any other column type reads an array as null.
      ops[i] = c.type === 'json' ? OP_ARRAY : OP_NULL;
      arrays[i] = items;
      continue;
    }
    if (slot === undefined) {
      // A null, an absent key, or a path through a scalar: null. An object is null too, except in
      // a JSON column.
      if (c.type === 'json' && t.objects.has(path)) return null;
      ops[i] = OP_NULL;
      continue;
    }
    if (c.type === 'json') return null;
    const kind = t.kinds[slot]!;
    slots[i] = slot;
    if (c.type === 'number') ops[i] = kind === K_NUMBER ? OP_NUMBER : OP_NULL;
    else if (c.type === 'string') ops[i] = kind === K_STRING ? OP_STRING : OP_NULL;
    else ops[i] = kind === K_BOOLEAN ? OP_BOOLEAN : OP_NULL;
  }
  return { ops, slots, arrays, kinds: t.kinds };
}

const NO_PLAN = Symbol('no plan');
const MAX_PLANS = 64;

/** The cached plan of `columns` (identified by `id`) over `t`, or null (see planOf). */
export function fieldPlan(t: Template, id: string, columns: readonly FieldColumn[]): FieldPlan | null {
  let plan = t.plans.get(id) as FieldPlan | typeof NO_PLAN | undefined;
  if (plan === undefined) {
    // Column lists change only when versions do; a bound in case they change batch after batch.
    if (t.plans.size >= MAX_PLANS) t.plans.clear();
    plan = planOf(t, columns) ?? NO_PLAN;
    t.plans.set(id, plan);
  }
  return plan === NO_PLAN ? null : plan;
}

/** Append the matched record's row (its values in `v`, bytes in `b`) to `builders`. */
export function applyPlan(plan: FieldPlan, builders: readonly FieldBuilder[], v: SlotValues, b: Buffer): void {
  const { ops, slots } = plan;
  for (let i = 0; i < ops.length; i++) {
    const slot = slots[i]!;
    switch (ops[i]) {
      case OP_NUMBER:
        (builders[i] as Float64Column).push(v.nums[slot]!);
        break;
      case OP_STRING:
        if (v.escaped[slot] === 0) (builders[i] as StringColumn).pushBytes(b, v.starts[slot]!, v.ends[slot]!);
        else (builders[i] as StringColumn).push(stringValue(v, b, slot));
        break;
      case OP_BOOLEAN:
        (builders[i] as BoolColumn).push(v.nums[slot] === 1);
        break;
      case OP_ARRAY:
        (builders[i] as StringColumn).push(arrayText(plan.arrays[i]!, plan.kinds, v, b));
        break;
      case OP_NESTED:
        if (v.escaped[slot] === 0) (builders[i] as StringColumn).pushBytes(b, v.starts[slot]!, v.ends[slot]!);
        else pushJson(builders[i] as StringColumn, JSON.parse(b.toString('utf8', v.starts[slot]!, v.ends[slot]!)));
        break;
      case OP_EMPTY_OBJECT:
        (builders[i] as StringColumn).push('{}');
        break;
      default:
        builders[i]!.pushNull();
    }
  }
}

/** The JSON column value of `value`, as the compiled extractor pushes it. */
function pushJson(column: StringColumn, value: unknown): void {
  const text = jsonText(value);
  if (text === null) column.pushNull();
  else column.push(text);
}

/** JSON.stringify's text of an array of scalars from its element slots (-1: null). */
function arrayText(items: readonly number[], kinds: Uint8Array, v: SlotValues, b: Buffer): string {
  let out = '[';
  for (let k = 0; k < items.length; k++) {
    if (k > 0) out += ',';
    const slot = items[k]!;
    const kind = slot < 0 ? -1 : kinds[slot];
    // A string without escapes is its own JSON text (nothing in it JSON.stringify would escape).
    if (kind === K_STRING)
      out +=
        v.escaped[slot] === 1
          ? JSON.stringify(stringValue(v, b, slot))
          : b.toString('utf8', v.starts[slot]! - 1, v.ends[slot]! + 1);
    else if (kind === K_NUMBER) out += JSON.stringify(v.nums[slot]);
    else if (kind === K_BOOLEAN) out += v.nums[slot] === 1 ? 'true' : 'false';
    else out += 'null';
  }
  return out + ']';
}
