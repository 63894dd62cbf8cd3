import type { Segment } from '../schema/shape.js';
import { hintBindings } from './hint-lines.js';
import type {
  BindingHow,
  CandidateReport,
  FieldBinding,
  MappingInput,
  MappingResult,
  OutputField,
  QuestionReason,
} from './mapping-types.js';
import {
  absentFieldOf,
  matchStrength,
  nameMatcher,
  sharedWords,
  sourceFieldOf,
  STRENGTHS,
  typeFits,
  type SourceField,
} from './path-match.js';
import { proposeFields } from './propose-schema.js';
import { scriptHash, writeTransformScript, type ScriptField } from './script-writer.js';
import { parseSourcePath, segmentsKey, type SourcePath } from './source-path.js';

export { proposeOutputSchema } from './propose-schema.js';
export { scriptHash } from './script-writer.js';

/**
 * `transform_mode: auto` without a network: binds each output field of a view to paths of one
 * settled schema version and writes the transform as readable JavaScript, or asks one question
 * when it would have to guess. Deterministic: equal input gives a byte-identical script.
 *
 * Per output field, strongest first: the policy's `output_bindings`, then hint lines (the first
 * listed path the version has, of a fitting type, wins); with neither, name matching (`exact`,
 * `normalized`, `leaf`) over the version's paths and the policy's nullable inputs. Two fitting
 * paths at the best strength are ambiguous unless one fallback group holds them all. A chosen path
 * in a fallback group is read with the group's other paths (`a ?? b`, group order). Meaning of
 * each policy field: docs/views-auto-mapping.md.
 */
export function generateMapping(input: MappingInput): MappingResult {
  const { version, policy } = input;
  const proposed = input.outputSchema === null ? proposeFields([version]) : null;
  const outputSchema: OutputField[] = proposed ? proposed.map((p) => p.field) : input.outputSchema!;
  const ctx = context(input, outputSchema);
  const report = emptyReport();
  const bindings: Record<string, FieldBinding> = {};
  const scriptFields: ScriptField[] = [];
  let ask: { field: OutputField; problem: Problem } | null = null;

  outputSchema.forEach((field, i) => {
    const r = resolveField(field, proposed ? proposed[i]!.segments : null, ctx);
    for (const p of r.unknown) add(report.unknown_paths, p);
    for (const s of r.incompatible) add(report.incompatible_paths, s.text);
    if ('problem' in r) {
      // allow_drops covers a field nothing can feed, never a guess between two paths.
      if (policy.allow_drops && r.problem.reason !== 'ambiguous') {
        bindings[field.name] = { paths: [], how: 'dropped' };
        scriptFields.push({
          name: field.name,
          type: field.type,
          paths: [],
          note: `nothing in schema version ${version.number} feeds it; null (allow_drops)`,
        });
      } else ask ??= { field, problem: r.problem };
      return;
    }
    for (const p of r.tolerated) add(report.absent_paths, p);
    for (const s of r.sources) {
      if (s.key !== r.primary) add(report.substitution_paths, s.text);
      if (!s.present) add(report.absent_paths, s.text);
      else if (s.types.length === 0) add(report.present_null_paths, s.text);
      else add(report.exact_paths, s.text);
    }
    const paths = r.sources.map((s) => s.text);
    bindings[field.name] = { paths, how: r.how };
    if (paths.length > 0) report.bindings[field.name] = paths;
    scriptFields.push({ name: field.name, type: field.type, paths: r.sources.map((s) => s.segments), note: r.note });
  });

  if (ask !== null) {
    const { field, problem } = ask as { field: OutputField; problem: Problem };
    return {
      kind: 'question',
      question: questionText(field, problem, version.number),
      reason: problem.reason,
      field: field.name,
      paths: problem.offered.map((s) => s.text),
      outputSchema,
      partial: bindings,
      candidates: [{ transform_id: null, verdict: 'question', reason: problem.reason, ...report }],
    };
  }
  const script = writeTransformScript({ versionId: version.id, versionNumber: version.number, fields: scriptFields });
  return {
    kind: 'script',
    script,
    hash: scriptHash(script),
    outputSchema,
    bindings,
    candidates: [{ transform_id: null, verdict: 'script', reason: null, ...report }],
  };
}

/** A path named for a field outside name matching. */
interface Explicit {
  text: string;
  how: 'binding' | 'hint' | 'origin';
}

/** What the generator knows while resolving fields. */
interface Context {
  fields: SourceField[];
  byKey: Map<string, SourceField>;
  nullable: Map<string, SourcePath>;
  /** Fallback groups as parsed paths (entries that do not parse left out). */
  groups: SourcePath[][];
  /** What name matching looks at: readable version paths, then nullable inputs the version lacks. */
  pool: SourceField[];
  /** Output field → policy bindings then hint lines. */
  explicit: Map<string, Explicit[]>;
  versionNumber: number;
}

function context(input: MappingInput, outputSchema: readonly OutputField[]): Context {
  const fields: SourceField[] = [];
  const byKey = new Map<string, SourceField>();
  for (const f of input.version.fields) {
    const s = sourceFieldOf(f);
    if (s === null || byKey.has(s.key)) continue;
    fields.push(s);
    byKey.set(s.key, s);
  }
  const nullable = new Map<string, SourcePath>();
  for (const text of input.policy.nullable_inputs) {
    const p = parseSourcePath(text);
    if (p !== null && !nullable.has(p.key)) nullable.set(p.key, p);
  }
  const groups = input.policy.fallback_groups
    .map((g) => g.map(parseSourcePath).filter((p): p is SourcePath => p !== null))
    .filter((g) => g.length > 0);
  const hinted = hintBindings(
    input.hint,
    outputSchema.map((f) => f.name),
  );
  const bound = input.policy.output_bindings;
  const explicit = new Map<string, Explicit[]>();
  for (const f of outputSchema) {
    const own = Object.hasOwn(bound, f.name) ? (bound[f.name] ?? []) : [];
    const list: Explicit[] = [
      ...own.map((text) => ({ text, how: 'binding' as const })),
      ...(hinted.get(f.name) ?? []).map((text) => ({ text, how: 'hint' as const })),
    ];
    if (list.length > 0) explicit.set(f.name, list);
  }
  const pool = [...fields, ...[...nullable.values()].filter((p) => !byKey.has(p.key)).map(absentFieldOf)].filter(
    readable,
  );
  return { fields, byKey, nullable, groups, pool, explicit, versionNumber: input.version.number };
}

interface Problem {
  reason: QuestionReason;
  /** Paths of the version offered as answers. */
  offered: SourceField[];
  /** The paths behind the problem: tied (ambiguous), unfitting (incompatible), bound but missing (no_source). */
  involved: Array<{ text: string; type: string }>;
  /** The paths were named by bindings or hint lines (not found by name). */
  bound: boolean;
}

interface Found {
  sources: SourceField[];
  how: BindingHow;
  /** Key of the path chosen first; null when fallback paths stand in for a missing one. */
  primary: string | null;
  note: string;
  /** Bound paths the version lacks whose absence is tolerated. */
  tolerated: string[];
}

type Resolution = (Found | { problem: Problem }) & { unknown: string[]; incompatible: SourceField[] };

const MAX_OFFERED = 20;

const WHY: Record<Explicit['how'], string> = {
  binding: 'output_bindings',
  hint: 'hint line',
  origin: 'the path this proposed field was made from',
};

function resolveField(field: OutputField, origin: Segment[] | null, ctx: Context): Resolution {
  const unknown: string[] = [];
  const incompatible: SourceField[] = [];
  const fits = (s: SourceField) => typeFits(field.type, s);
  const unfit = (s: SourceField) => {
    if (!incompatible.some((x) => x.key === s.key)) incompatible.push(s);
  };
  const done = (primary: SourceField, how: BindingHow, why: string): Resolution => {
    const sources = withGroup(primary, field, ctx, unfit);
    const grouped = sources.length > 1;
    const note = grouped
      ? `${why}; read with its fallback group: ${sources.map((s) => s.text).join(' ?? ')}`
      : `${primary.text} (${why})`;
    return {
      sources,
      how: grouped ? 'fallback' : how,
      primary: primary.key,
      note,
      tolerated: [],
      unknown,
      incompatible,
    };
  };
  if (field.type === 'null')
    return {
      sources: [],
      how: 'dropped',
      primary: null,
      note: 'always null (output type null)',
      tolerated: [],
      unknown,
      incompatible,
    };

  // 1. Explicit candidates — policy bindings, hint lines, the path a proposed field came from:
  // the first the version has, of a fitting type, wins.
  const listed: Array<Explicit & { path: SourcePath | null }> = (ctx.explicit.get(field.name) ?? []).map((c) => ({
    ...c,
    path: parseSourcePath(c.text),
  }));
  if (origin !== null)
    listed.push({
      text: '',
      how: 'origin',
      path: ctx.fields.find((s) => segmentsKey(s.segments) === segmentsKey(origin)) ?? null,
    });
  if (listed.length > 0) {
    const missing: Array<{ path: SourcePath; how: Explicit['how'] }> = [];
    for (const c of listed) {
      if (c.path === null) {
        add(unknown, c.text.trim());
        continue;
      }
      const s = ctx.byKey.get(c.path.key);
      if (s === undefined) missing.push({ path: c.path, how: c.how });
      else if (!fits(s)) unfit(s);
      else {
        // Paths listed before the winner that the version lacks are still reported.
        for (const m of missing) add(unknown, m.path.text);
        return done(s, c.how === 'origin' ? 'exact' : c.how, WHY[c.how]);
      }
    }
    const others = (m: { path: SourcePath }) =>
      missing.filter((x) => x !== m).forEach((x) => add(unknown, x.path.text));
    // None present: fallback-group paths stand in; else a nullable input is read (null for now).
    for (const m of missing) {
      const subs = (groupOf(m.path, ctx) ?? [])
        .map((p) => ctx.byKey.get(p.key))
        .filter((s): s is SourceField => s !== undefined && fits(s));
      if (subs.length > 0) {
        const note = `${m.path.text} (${WHY[m.how]}) is not in schema version ${ctx.versionNumber}; its fallback group reads ${subs.map((s) => s.text).join(' ?? ')}`;
        others(m);
        return { sources: subs, how: 'fallback', primary: null, note, tolerated: [m.path.text], unknown, incompatible };
      }
    }
    for (const m of missing) {
      if (ctx.nullable.has(m.path.key)) {
        const why = `${WHY[m.how]}; a nullable input not in schema version ${ctx.versionNumber}, null until records carry it`;
        others(m);
        return done(absentFieldOf(m.path), m.how === 'origin' ? 'exact' : m.how, why);
      }
    }
    for (const m of missing) add(unknown, m.path.text);
    const problem: Problem =
      incompatible.length > 0
        ? { reason: 'incompatible', offered: suggestions(field, ctx), involved: incompatible.map(typed), bound: true }
        : {
            reason: 'no_source',
            offered: suggestions(field, ctx),
            involved: unknown.map((text) => ({ text, type: 'absent' })),
            bound: true,
          };
    return { problem, unknown, incompatible };
  }

  // 2–4. Name matching over the version's paths and the nullable inputs it lacks.
  const matcher = nameMatcher(field.name);
  let best = STRENGTHS.length;
  let hits: SourceField[] = [];
  for (const s of ctx.pool) {
    const m = matchStrength(matcher, s);
    const rank = m === null ? STRENGTHS.length : STRENGTHS.indexOf(m);
    if (rank < best) {
      best = rank;
      hits = [s];
    } else if (rank === best && rank < STRENGTHS.length) hits.push(s);
  }
  if (hits.length > 0) {
    const strength = STRENGTHS[best]!;
    const fitting = hits.filter(fits);
    hits.filter((s) => !fits(s)).forEach(unfit);
    if (fitting.length === 1) return done(fitting[0]!, strength, `${strength} name match`);
    if (fitting.length > 1) {
      const first = sharedGroup(fitting, ctx);
      if (first !== null) return done(first, strength, `${strength} name match`);
      const tied = fitting.slice(0, MAX_OFFERED);
      return {
        problem: {
          reason: 'ambiguous',
          offered: tied.filter((s) => s.present),
          involved: tied.map(typed),
          bound: false,
        },
        unknown,
        incompatible,
      };
    }
    // The best name match cannot feed the field: ask rather than fall back to a weaker match.
    return {
      problem: {
        reason: 'incompatible',
        offered: suggestions(field, ctx),
        involved: hits.slice(0, MAX_OFFERED).map(typed),
        bound: false,
      },
      unknown,
      incompatible,
    };
  }
  return {
    problem: { reason: 'no_source', offered: suggestions(field, ctx), involved: [], bound: false },
    unknown,
    incompatible,
  };
}

function typed(s: SourceField): { text: string; type: string } {
  return { text: s.text, type: s.type };
}

/** A path name matching may pick: not an element (read through its array), not an object (its fields hold the values). */
function readable(s: SourceField): boolean {
  return s.segments[s.segments.length - 1] !== null && !(s.types.length > 0 && s.types.every((t) => t === 'object'));
}

function groupOf(p: SourcePath, ctx: Context): SourcePath[] | null {
  return ctx.groups.find((g) => g.some((m) => m.key === p.key)) ?? null;
}

/** When one fallback group holds every tied path: the first of them in group order. */
function sharedGroup(tied: SourceField[], ctx: Context): SourceField | null {
  const g = groupOf(tied[0]!, ctx);
  if (g === null || !tied.every((s) => g.some((m) => m.key === s.key))) return null;
  const first = g.find((m) => tied.some((s) => s.key === m.key))!;
  return tied.find((s) => s.key === first.key)!;
}

/** `primary` and, when it is in a fallback group, the group's other usable paths, in group order. */
function withGroup(
  primary: SourceField,
  field: OutputField,
  ctx: Context,
  unfit: (s: SourceField) => void,
): SourceField[] {
  const g = groupOf(primary, ctx);
  if (g === null) return [primary];
  const sources: SourceField[] = [];
  for (const m of g) {
    if (m.key === primary.key) sources.push(primary);
    else {
      // A member this version lacks is skipped, unless it is a nullable input (read, null for now).
      const s = ctx.byKey.get(m.key) ?? (ctx.nullable.has(m.key) ? absentFieldOf(m) : undefined);
      if (s === undefined) continue;
      if (typeFits(field.type, s)) sources.push(s);
      else unfit(s);
    }
  }
  return sources;
}

/** Present paths that could feed the field, those sharing words with its name first. */
function suggestions(field: OutputField, ctx: Context): SourceField[] {
  return ctx.fields
    .filter((s) => readable(s) && typeFits(field.type, s))
    .map((s, i) => ({ s, i, score: sharedWords(field.name, s) }))
    .sort((a, b) => b.score - a.score || a.i - b.i)
    .slice(0, MAX_OFFERED)
    .map((x) => x.s);
}

/** The name as a hint line can state it: bare when it reads back unchanged, else a JSON string. */
function hintName(name: string): string {
  return /^[^\s"*-]([^:\r\n]*[^\s:])?$/u.test(name) && !name.includes('<-') ? name : JSON.stringify(name);
}

function questionText(field: OutputField, p: Problem, versionNumber: number): string {
  const label = `output field ${JSON.stringify(field.name)} (${field.type})`;
  const list = (xs: Array<{ text: string; type: string }>) =>
    xs.map((x) => (x.type === 'absent' ? x.text : `${x.text} (${x.type})`)).join(', ');
  const candidates =
    p.offered.length > 0
      ? ` Candidates: ${list(p.offered.map(typed))}.`
      : ' No path of the version has a type that fits it.';
  const example = p.offered[0]?.text ?? (p.reason === 'ambiguous' ? p.involved[0]!.text : '$.path');
  const answer = `Answer with a mapping policy output_binding or a hint line "${hintName(field.name)}: ${example}"`;
  const drops = 'or set allow_drops to leave the field null.';
  switch (p.reason) {
    case 'ambiguous':
      return `Which path should feed ${label}? Candidates: ${list(p.involved)}. ${answer}.`;
    case 'incompatible':
      return `${capital(label)} ${p.bound ? 'is bound to' : 'matches'} ${list(p.involved)} in schema version ${versionNumber}, of a type that cannot feed it.${candidates} ${answer}, ${drops}`;
    case 'no_source': {
      const head = p.bound
        ? `${capital(label)} is bound to ${list(p.involved)}, which schema version ${versionNumber} lacks.`
        : `No path of schema version ${versionNumber} matches ${label}.`;
      return `${head}${candidates} ${answer}, list the path in nullable_inputs to read it as null until records carry it, ${drops}`;
    }
  }
}

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function add(list: string[], item: string): void {
  if (!list.includes(item)) list.push(item);
}

function emptyReport(): Omit<CandidateReport, 'transform_id' | 'verdict' | 'reason'> {
  return {
    exact_paths: [],
    present_null_paths: [],
    absent_paths: [],
    incompatible_paths: [],
    substitution_paths: [],
    unknown_paths: [],
    bindings: {},
  };
}
