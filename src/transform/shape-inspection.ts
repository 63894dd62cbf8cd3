import type { SchemaVersionRecord } from '../schema/versions.js';
import { mapVersion } from './generation-plan.js';
import { proposeOutputSchema } from './mapping-generator.js';
import type { CandidateReport } from './mapping-types.js';
import type { ViewDeferralRecord, ViewRecord, ViewTransformRecord } from './view-records.js';

/**
 * Shape inspection (spec: Shape inspection; docs/views.md, "Waiting shapes"): why a waiting shape
 * waits, computed on demand and without side effects — the paths its schema version has, what the
 * mapping generator makes of that version under the view's output schema, policy and hint, and
 * whether a transform that exists already runs the script it would write.
 */

/** Spec: ViewMappingReuseDecision (structure ours). */
export interface MappingReuseDecision {
  /**
   * `served` a transform serves the shape; `excluded` a person excluded it; `wait` its version has
   * not settled; `reuse` an existing transform already runs the script generated for it (assign it
   * there); `generate` a new script would be written; `ask` the generator has a question; `failed`
   * generation cannot run (e.g. no output schema can be proposed).
   */
  action: 'served' | 'excluded' | 'wait' | 'reuse' | 'generate' | 'ask' | 'failed';
  transform_id: string | null;
  /** Hash of the script generated for the version (equal hashes run identical scripts); null when none. */
  script_hash: string | null;
  reason: string;
}

export interface ShapeInspection {
  view_id: string;
  deferral_id: string;
  episode: number;
  mapping_generation: number | null;
  version: number | null;
  /** Path → type of the version's fields; null for a path only ever seen as null (read as empty). */
  signatures: Record<string, string | null>;
  decision: MappingReuseDecision;
  candidates: CandidateReport[];
}

export function inspectShape(
  view: ViewRecord,
  d: ViewDeferralRecord,
  version: SchemaVersionRecord | null,
  transforms: readonly ViewTransformRecord[],
): ShapeInspection {
  const signatures: Record<string, string | null> = {};
  for (const f of version?.fields ?? []) signatures[f.path] = f.type === 'null' ? null : f.type;
  const base = {
    view_id: view.id,
    deferral_id: d.id,
    episode: d.episode,
    mapping_generation: d.hint_mapping_generation,
    version: d.schema_version,
    signatures,
  };
  const decided = (decision: MappingReuseDecision, candidates: CandidateReport[] = []): ShapeInspection => ({
    ...base,
    decision,
    candidates,
  });

  if (d.excluded_at !== null)
    return decided({
      action: 'excluded',
      transform_id: null,
      script_hash: null,
      reason: d.exclusion_reason ?? 'excluded by a decision',
    });
  if (d.resolved_at !== null)
    return decided({
      action: 'served',
      transform_id: d.transform_id,
      script_hash: null,
      reason: `served by transform ${d.transform_id ?? '(unknown)'} since ${d.resolved_at}`,
    });
  if (version === null || version.state !== 'settled') {
    return decided({
      action: 'wait',
      transform_id: null,
      script_hash: null,
      reason:
        version === null
          ? 'the shape has no schema version yet'
          : `schema version ${version.version} is ${version.state}: scripts are generated for settled versions`,
    });
  }
  const schema = view.output_schema.length > 0 ? view.output_schema : proposeOutputSchema([version]);
  if (schema.length === 0)
    return decided({
      action: 'failed',
      transform_id: null,
      script_hash: null,
      reason: `schema version ${version.version} holds no scalar field to propose an output schema from; declare output_schema`,
    });
  const result = mapVersion(view, schema, version);
  const withScript = transforms.filter((t) => t.transform_script !== null && t.status !== 'disabled');
  if (result.kind === 'question') {
    const candidates = result.candidates.map((c) => ({ ...c, transform_id: c.transform_id ?? d.transform_id }));
    return decided(
      { action: 'ask', transform_id: d.transform_id, script_hash: null, reason: result.question },
      candidates,
    );
  }
  const same = withScript.find((t) => t.script_hash === result.hash);
  const target = same ?? withScript[0] ?? null;
  const candidates = result.candidates.map((c) => ({ ...c, transform_id: c.transform_id ?? target?.id ?? null }));
  if (same)
    return decided(
      {
        action: 'reuse',
        transform_id: same.id,
        script_hash: result.hash,
        reason: `transform ${same.id} already runs the script generated for schema version ${version.version}`,
      },
      candidates,
    );
  return decided(
    {
      action: 'generate',
      transform_id: target?.id ?? null,
      script_hash: result.hash,
      reason: `no transform runs the script generated for schema version ${version.version}; generation would write it`,
    },
    candidates,
  );
}
