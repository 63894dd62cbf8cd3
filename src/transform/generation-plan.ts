import { newId } from '../ids.js';
import type { SchemaVersionRecord } from '../schema/versions.js';
import { generateMapping, proposeOutputSchema } from './mapping-generator.js';
import type { MappingResult } from './mapping-types.js';
import type {
  OutputField,
  ViewDeferralRecord,
  ViewRecord,
  ViewTransformRecord,
  ViewVersionRecord,
} from './view-records.js';

/** The committed state of one view and its collection's schema versions, read in the write transaction. */
export interface GenerationInput {
  view: ViewRecord;
  transforms: readonly ViewTransformRecord[];
  records: readonly ViewVersionRecord[];
  deferrals: readonly ViewDeferralRecord[];
  /** The collection's live schema versions as the API lists them (effective state). */
  versions: readonly SchemaVersionRecord[];
  now: string;
}

/** What to write: only records that change (an empty plan writes nothing, so passes reach a fixed point). */
export interface GenerationPlan {
  empty: boolean;
  view: Partial<ViewRecord>;
  transforms: ViewTransformRecord[];
  records: ViewVersionRecord[];
  deferrals: ViewDeferralRecord[];
  /** Why generation itself failed, when it did. */
  failure: string | null;
}

/**
 * One generation pass over a view (docs/views.md, "Auto mode"), without I/O. The script is
 * generated for the newest settled schema version and serves every record of the view (the
 * pipeline runs one script per view); each settled version gets a view version record naming it.
 * Waiting shapes are kept one per schema version: `collecting_samples` while the version has not
 * settled, `awaiting_script` (with the question, if the generator asked one) or `generation_failed`
 * once it has, resolved as `served` when a script covers it.
 */
export function planGeneration(input: GenerationInput): GenerationPlan {
  const { view, transforms, now } = input;
  const out = new PlanBuilder(input);
  const settled = input.versions.filter((v) => v.state === 'settled').sort((a, b) => a.version - b.version);
  const newest = settled.at(-1);
  const decisions = input.deferrals.filter(
    (d) => d.resolved_at === null && d.next_action_at !== null && d.decision !== null,
  );

  // A person assigned a waiting shape to a transform with a script: that transform covers its version.
  for (const d of decisions) {
    if (d.decision!.action !== 'assign') continue;
    const t = transforms.find((x) => x.id === d.transform_id && x.transform_script !== null && x.status !== 'disabled');
    const v = input.versions.find((x) => x.version === d.schema_version);
    if (t && v) out.cover(v, t);
    out.deferral(d, t ? { resolved_at: now, reason: 'served', next_action_at: null } : { next_action_at: null });
  }

  // Manual mode writes no script by itself: only a queued transform someone asked to generate for.
  const queued = transforms.filter(
    (t) => t.status === 'queued' && (view.transform_mode === 'auto' || t.generation_requested_at !== undefined),
  );
  const covering = coveringTransform(input);
  const uncovered = view.transform_mode === 'auto' && settled.some((v) => !out.recordOf(v.id));
  const asked = decisions.some((d) => d.decision!.action === 'generate');
  const targets = queued.length > 0 ? queued : (uncovered || asked) && covering ? [covering] : [];
  const serving = () =>
    out.transformsNow().some((t) => t.transform_script !== null && (t.status === 'active' || t.status === 'queued'));

  if (newest && targets.length > 0) {
    let schema: OutputField[] = view.output_schema;
    if (schema.length === 0) {
      schema = proposeOutputSchema(settled);
      if (schema.length > 0) out.view.output_schema = schema;
    }
    let result: MappingResult | null = null;
    let failure: string | null = null;
    try {
      if (schema.length === 0)
        throw new Error(
          `schema version ${newest.version} holds no scalar field to propose an output schema from; declare output_schema`,
        );
      result = mapVersion(view, schema, newest);
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    for (const d of decisions) if (d.decision!.action === 'generate') out.deferral(d, { next_action_at: null });
    if (result?.kind === 'script') {
      for (const t of targets) {
        out.transform(t, {
          transform_script: result.script,
          script_hash: result.hash,
          status: 'active',
          error_message: null,
          tgl_retry_count: 0,
          backfill_status: t.backfill_status === 'none' ? 'pending' : t.backfill_status,
        });
      }
      for (const v of settled) out.cover(v, out.transformNow(targets[0]!.id));
      // Every record of the view now goes through the script: nothing waits any more.
      for (const d of input.deferrals)
        if (d.resolved_at === null && input.versions.some((v) => v.version === d.schema_version))
          out.deferral(d, { resolved_at: now, reason: 'served', transform_id: targets[0]!.id, next_action_at: null });
    } else if (result?.kind === 'question') {
      out.waiting(newest, {
        reason: 'awaiting_script',
        hint_question: result.question,
        hint_reason: result.reason,
        hint_paths: result.paths,
        hint_mapping_generation: view.mapping_generation,
      });
    } else {
      out.failure = `generation of a script for schema version ${newest.version} failed: ${failure}`;
      for (const t of targets)
        if (t.status === 'queued' && t.transform_script === null)
          out.transform(t, { status: 'error', error_message: out.failure });
      out.waiting(newest, {
        reason: 'generation_failed',
        hint_question: null,
        hint_reason: null,
        hint_paths: [],
        hint_mapping_generation: null,
      });
    }
  }

  // Nothing serves: every version's records wait, in a shape that says why.
  if (!serving() && (view.transform_mode === 'auto' || queued.length > 0)) {
    for (const v of input.versions) {
      if (v === newest && targets.length > 0) continue;
      // A settled version keeps the reason generation gave it (a question, a failure).
      const open = out.openOf(v);
      out.waiting(v, {
        reason:
          v.state !== 'settled'
            ? 'collecting_samples'
            : open && open.reason !== 'collecting_samples'
              ? open.reason
              : 'awaiting_script',
      });
    }
  }
  return out.done();
}

/** The generator's answer for `version` under the view's policy and hint, producing `schema`. */
export function mapVersion(
  view: ViewRecord,
  schema: readonly OutputField[],
  version: SchemaVersionRecord,
): MappingResult {
  // A schema equal to the version's own proposal is generated as one: each field reads the path it was made from.
  const proposal = JSON.stringify(proposeOutputSchema([version])) === JSON.stringify(schema);
  return generateMapping({
    outputSchema: proposal ? null : [...schema],
    version: { id: version.id, number: version.version, fields: version.fields },
    policy: {
      output_bindings: view.mapping_policy_output_bindings,
      fallback_groups: view.mapping_policy_fallback_groups,
      nullable_inputs: view.mapping_policy_nullable_inputs,
      allow_drops: view.mapping_policy_allow_drops,
    },
    hint: view.hint,
  });
}

/** The transform serving the view's generated script: the one its newest version record names, if it still serves. */
function coveringTransform(input: GenerationInput): ViewTransformRecord | undefined {
  const newest = [...input.records].sort((a, b) => b.version - a.version)[0];
  const t = newest ? input.transforms.find((x) => x.id === newest.transform_id) : undefined;
  return t && t.transform_script !== null && (t.status === 'active' || t.status === 'queued') ? t : undefined;
}

type DeferralPatch = Partial<
  Pick<
    ViewDeferralRecord,
    | 'reason'
    | 'resolved_at'
    | 'hint_question'
    | 'hint_reason'
    | 'hint_paths'
    | 'hint_mapping_generation'
    | 'next_action_at'
    | 'transform_id'
  >
>;

/** Collects changed records; a record equal to what is stored is left out. */
class PlanBuilder {
  readonly view: Partial<ViewRecord> = {};
  failure: string | null = null;
  private readonly transforms = new Map<string, ViewTransformRecord>();
  private readonly records = new Map<string, ViewVersionRecord>();
  private readonly deferrals = new Map<string, ViewDeferralRecord>();

  constructor(private readonly input: GenerationInput) {}

  transformNow(id: string): ViewTransformRecord {
    return this.transforms.get(id) ?? this.input.transforms.find((t) => t.id === id)!;
  }

  transformsNow(): ViewTransformRecord[] {
    return this.input.transforms.map((t) => this.transformNow(t.id));
  }

  recordOf(schemaVersionId: string): ViewVersionRecord | undefined {
    return (
      [...this.records.values()].find((r) => r.schema_version_id === schemaVersionId) ??
      this.input.records.find((r) => r.schema_version_id === schemaVersionId)
    );
  }

  transform(t: ViewTransformRecord, patch: Partial<ViewTransformRecord>): void {
    const cur = this.transformNow(t.id);
    const next = { ...cur, ...patch };
    if (same(cur, next)) return;
    this.transforms.set(t.id, { ...next, updated_at: this.input.now });
  }

  /** The version is covered by `t`'s script: its view version record names them. */
  cover(v: SchemaVersionRecord, t: ViewTransformRecord): void {
    const cur = this.recordOf(v.id);
    const now = this.input.now;
    const base: ViewVersionRecord = cur ?? {
      id: newId('viewVersion'),
      view_id: this.input.view.id,
      version: v.version,
      schema_version_id: v.id,
      transform_id: t.id,
      status: t.status,
      error_message: null,
      evidence_notice: null,
      script_hash: null,
      script: null,
      backfill_status: t.backfill_status,
      backfill_start_at: null,
      backfill_started_at: null,
      backfill_completed_at: null,
      backfill_file_count: 0,
      backfill_files_done: 0,
      backfill_error: null,
      created_at: now,
      updated_at: now,
    };
    const next: ViewVersionRecord = {
      ...base,
      transform_id: t.id,
      script: t.transform_script,
      script_hash: t.script_hash,
      status: t.status,
      error_message: null,
    };
    if (cur && same(cur, next)) return;
    this.records.set(next.id, { ...next, updated_at: now });
  }

  deferral(d: ViewDeferralRecord, patch: DeferralPatch): void {
    const cur = this.deferrals.get(d.id) ?? d;
    const next = { ...cur, ...patch };
    if (same(cur, next)) return;
    this.deferrals.set(d.id, {
      ...next,
      last_deferred_at: next.resolved_at === null ? this.input.now : next.last_deferred_at,
      hint_requested_at:
        next.hint_question !== cur.hint_question
          ? next.hint_question === null
            ? null
            : this.input.now
          : next.hint_requested_at,
    });
  }

  /** The version's open waiting shape, created or brought up to date (counts and signature from the version). */
  waiting(v: SchemaVersionRecord, patch: DeferralPatch): void {
    const now = this.input.now;
    const open = this.openOf(v);
    // A person excluded this version's shape: it stops waiting for good.
    if (!open && this.input.deferrals.some((d) => d.schema_version === v.version && d.excluded_at !== null)) return;
    const counts = {
      full_signature: v.signature,
      event_count: v.row_count,
      retained_rows: v.row_count,
      first_event_at: v.first_seen_at,
      first_observed_at: v.first_seen_at,
      last_observed_at: v.last_seen_at,
    };
    if (open) {
      const cur = this.deferrals.get(open.id) ?? open;
      const next = { ...cur, ...counts, ...patch };
      if (same(cur, next)) return;
      this.deferrals.set(open.id, {
        ...next,
        last_deferred_at: now,
        hint_requested_at:
          next.hint_question !== cur.hint_question ? (next.hint_question === null ? null : now) : cur.hint_requested_at,
      });
      return;
    }
    const episode = 1 + this.input.deferrals.filter((d) => d.schema_version === v.version).length;
    const d: ViewDeferralRecord = {
      id: newId('viewDeferral'),
      view_id: this.input.view.id,
      ...counts,
      first_deferred_at: now,
      last_deferred_at: now,
      resolved_at: null,
      reason: 'awaiting_script',
      schema_version: v.version,
      created_at: now,
      episode,
      observation_count: null,
      next_action_at: null,
      hint_question: null,
      hint_reason: null,
      hint_paths: [],
      hint_requested_at: null,
      hint_mapping_generation: null,
      exclusion_reason: null,
      excluded_at: null,
      transform_id: null,
      decision: null,
      ...patch,
    };
    if (d.hint_question !== null) d.hint_requested_at = now;
    this.deferrals.set(d.id, d);
  }

  /** The version's waiting shape that still waits, as staged so far. */
  openOf(v: SchemaVersionRecord): ViewDeferralRecord | undefined {
    return [...this.deferrals.values(), ...this.input.deferrals].find(
      (d) => d.resolved_at === null && d.schema_version === v.version,
    );
  }

  done(): GenerationPlan {
    const transforms = [...this.transforms.values()];
    const records = [...this.records.values()];
    const deferrals = [...this.deferrals.values()];
    const empty = transforms.length + records.length + deferrals.length + Object.keys(this.view).length === 0;
    return { empty, view: this.view, transforms, records, deferrals, failure: this.failure };
  }
}

function same(a: object, b: object): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
