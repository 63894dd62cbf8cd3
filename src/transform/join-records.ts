import type { ViewRow } from '../schema/file-reader.js';
import { recordsTextOf } from './records-text.js';
import { joinKey } from './join-key.js';
import type { LookupEntry } from './join-store.js';
import type { OutputField } from './output-schema.js';
import { outputRow } from './output-row.js';
import type { ViewJoinClause } from './view-records.js';
import type { RunScript } from './view-stage.js';

/**
 * Joined records (docs/views.md, "Join records"), without I/O: each base row becomes its output row
 * with one key per clause alias holding the matched lookup row (or null), clauses applied in
 * priority order; a join view without a script stores them flattened to `alias.field` columns.
 */

/** One clause with what applying it needs: the key's type on the base side, the lookup's fields. */
export interface JoinSide {
  clause: ViewJoinClause;
  baseField: OutputField;
  lookupFields: readonly OutputField[];
}

/** Clauses in the order they run: ascending `priority`, ties in the order given. */
export function clauseOrder(joins: readonly ViewJoinClause[]): ViewJoinClause[] {
  return joins
    .map((c, i) => ({ c, i }))
    .sort((a, b) => a.c.priority - b.c.priority || a.i - b.i)
    .map(({ c }) => c);
}

/**
 * Enrich base rows: `latest` answers the lookup entry indexed for a clause's key. A row without a
 * match under an `inner` clause is dropped (the clauses after it are not looked up); under `left`
 * the alias is null. Answers the rows kept and their joined records.
 */
export function joinRows(
  rows: readonly ViewRow[],
  baseFields: readonly OutputField[],
  sides: readonly JoinSide[],
  latest: (alias: string, key: string) => LookupEntry | undefined,
): { rows: ViewRow[]; records: Record<string, unknown>[] } {
  const kept: ViewRow[] = [];
  const records: Record<string, unknown>[] = [];
  next: for (const row of rows) {
    const rec = outputRow(baseFields, row.values);
    for (const { clause, baseField } of sides) {
      const key = joinKey(row.values[baseField.name], baseField.type);
      const match = key === null ? undefined : latest(clause.alias, key);
      if (!match && clause.join_type === 'inner') continue next;
      rec[clause.alias] = match ? match.record : null;
    }
    kept.push(row);
    records.push(rec);
  }
  return { rows: kept, records };
}

/**
 * The output schema of a join view without a script: the base view's fields, then per clause (in
 * order) each lookup field as `alias.field` with its type. A name already taken keeps its first field.
 */
export function passThroughSchema(baseFields: readonly OutputField[], sides: readonly JoinSide[]): OutputField[] {
  const out: OutputField[] = baseFields.map((f) => ({ name: f.name, type: f.type }));
  const taken = new Set(out.map((f) => f.name));
  for (const { clause, lookupFields } of sides) {
    for (const f of lookupFields) {
      const name = `${clause.alias}.${f.name}`;
      if (taken.has(name)) continue;
      taken.add(name);
      out.push({ name, type: f.type });
    }
  }
  return out;
}

/** A joined record flattened to the pass-through schema's names. */
export function flattenJoined(
  rec: Readonly<Record<string, unknown>>,
  baseFields: readonly OutputField[],
  sides: readonly JoinSide[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of baseFields) out[f.name] = rec[f.name] ?? null;
  for (const { clause, lookupFields } of sides) {
    const match = rec[clause.alias] as Record<string, unknown> | null | undefined;
    for (const f of lookupFields) {
      const name = `${clause.alias}.${f.name}`;
      if (!(name in out)) out[name] = match ? (match[f.name] ?? null) : null;
    }
  }
  return out;
}

/**
 * The "script" of a join view without one: each joined record flattened, one output per record.
 * It runs in the processor (no user code, so no sandbox), through the same stage as a script.
 */
export function passThroughRun(baseFields: readonly OutputField[], sides: readonly JoinSide[]): RunScript {
  return function passThrough(batch) {
    // JSON text escapes U+001E, so the separator never occurs inside a record.
    const texts = recordsTextOf(batch.recordsText).split('\u001e');
    const outputs = texts.map((t) => flattenJoined(JSON.parse(t) as Record<string, unknown>, baseFields, sides));
    const sources = new Uint32Array(outputs.length);
    for (let i = 0; i < sources.length; i++) sources[i] = i;
    return { status: 'ok', outputs, sources, rows: outputs.length };
  };
}
