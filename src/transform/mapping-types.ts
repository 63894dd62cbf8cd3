import type { VersionField } from '../schema/versions.js';

/**
 * Types of the auto-mapping generator (`transform_mode: auto`): what it reads (a view's output
 * schema, one settled schema version, the view's mapping policy and hint) and what it returns (a
 * transform script, or one question for the user). User-facing meaning: docs/views-auto-mapping.md.
 */

export { OUTPUT_FIELD_TYPES, type OutputField, type OutputFieldType } from './output-schema.js';
import type { OutputField } from './output-schema.js';

/**
 * The view's mapping policy (spec: View.mapping_policy_*). Paths are written `$.user.id`,
 * `$.items[*].sku`, `$["a.b"]` or dotted `user.id`; see `parseSourcePath`.
 */
export interface MappingPolicy {
  /** Output field → candidate paths, most preferred first; the first one this version has wins. */
  output_bindings: Record<string, string[]>;
  /** Groups of source paths that stand in for each other, in order of preference (read as `a ?? b`). */
  fallback_groups: string[][];
  /** Paths that may be absent from a version: a field bound to one reads null instead of asking. */
  nullable_inputs: string[];
  /** An output field nothing can feed is null instead of a question. */
  allow_drops: boolean;
}

/** The schema version a script is generated for (a settled collection schema version). */
export interface MappingVersion {
  id: string;
  number: number;
  fields: VersionField[];
}

export interface MappingInput {
  /** The view's output schema; null: proposed from the version (see `proposeOutputSchema`). */
  outputSchema: OutputField[] | null;
  version: MappingVersion;
  policy: MappingPolicy;
  /** Free text; lines `field: path` or `field <- path` are read as bindings, the rest is ignored. */
  hint: string | null;
}

/**
 * How an output field got its source: `binding` (policy output_bindings), `exact` (the field's
 * name is the path), `normalized` (equal ignoring case and separators), `leaf` (the last key, or
 * all keys joined, equal ignoring case and separators), `fallback` (read through a fallback
 * group), `hint` (a hint line), `dropped` (null: nothing feeds it, or the output type is `null`).
 */
export type BindingHow = 'binding' | 'exact' | 'normalized' | 'leaf' | 'fallback' | 'hint' | 'dropped';

/** The source of one output field: paths read in order (`a ?? b`), in canonical bracket form. */
export interface FieldBinding {
  paths: string[];
  how: BindingHow;
}

export type QuestionReason = 'ambiguous' | 'no_source' | 'incompatible';

/**
 * What the generator found for this version (spec: Shape inspection `candidates[]` entry). Path
 * lists are canonical bracket paths, each once, in output-schema order of first use.
 */
export interface CandidateReport {
  /** Null here: the caller knows which transform the script is for. */
  transform_id: string | null;
  verdict: 'script' | 'question';
  reason: QuestionReason | null;
  /** Paths the script reads that this version has with a typed (non-null) value. */
  exact_paths: string[];
  /** Paths the script reads that this version has, but only ever as null. */
  present_null_paths: string[];
  /** Paths bound or read that this version lacks, tolerated (nullable_inputs, or a fallback stands in). */
  absent_paths: string[];
  /** Paths considered for a field whose type cannot feed it. */
  incompatible_paths: string[];
  /** Fallback-group paths read behind, or in place of, a field's first path. */
  substitution_paths: string[];
  /** Bound paths (policy, hint) this version lacks with nothing tolerating it, or path text that does not parse. */
  unknown_paths: string[];
  /** Output field → paths it reads. */
  bindings: Record<string, string[]>;
}

/** A script covering every output field. */
export interface MappingScript {
  kind: 'script';
  /** Readable JavaScript defining `function transform(record, ctx)`. */
  script: string;
  /** `scriptHash(script)`. */
  hash: string;
  /** The output schema the script produces (the proposed one when the input had none). */
  outputSchema: OutputField[];
  bindings: Record<string, FieldBinding>;
  candidates: CandidateReport[];
}

/** The first output field (in schema order) the generator will not guess, asked as one question. */
export interface MappingQuestion {
  kind: 'question';
  question: string;
  reason: QuestionReason;
  /** The output field asked about. */
  field: string;
  /** Paths of this version offered as answers (canonical bracket form, verified present). */
  paths: string[];
  outputSchema: OutputField[];
  /** Bindings of every other field that resolved. */
  partial: Record<string, FieldBinding>;
  candidates: CandidateReport[];
}

export type MappingResult = MappingScript | MappingQuestion;
