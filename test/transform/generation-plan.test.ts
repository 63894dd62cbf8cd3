import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planGeneration, type GenerationInput } from '../../src/transform/generation-plan.js';
import { newTransform } from '../../src/transform/view-rules.js';
import { newView } from '../../src/transform/view-fields.js';
import type { SchemaVersionRecord } from '../../src/schema/versions.js';
import type {
  ViewDeferralRecord,
  ViewRecord,
  ViewTransformRecord,
  ViewVersionRecord,
} from '../../src/transform/view-records.js';
import type { ProjectRecord } from '../../src/catalog/records.js';

/** One generation pass, without I/O: what it writes, and that a second pass over its result writes nothing. */

const NOW = '2026-02-01T00:00:00.000Z';

function schemaVersion(
  n: number,
  state: SchemaVersionRecord['state'],
  fields: Array<[string, string]>,
): SchemaVersionRecord {
  return {
    id: `sch_${String(n).padStart(20, '0')}`,
    team_id: 't',
    project_id: 'p',
    collection_id: 'c',
    version: n,
    state,
    signature_hash: '0'.repeat(16),
    signature: `sig-${n}`,
    fields: fields.map(([path, type]) => ({ path, type, optional: false })),
    entry_keys: [],
    first_seen_at: NOW,
    last_seen_at: NOW,
    settled_at: null,
    settled_by: null,
    stale_at: null,
    row_count: 10 * n,
    shape_count: 1,
    merged_into: null,
    created_at: NOW,
    updated_at: NOW,
  };
}

/** The state after a pass: its writes applied over the input. */
function applied(input: GenerationInput): GenerationInput {
  const plan = planGeneration(input);
  const merge = <T extends { id: string }>(old: readonly T[], next: readonly T[]) => [
    ...old.filter((o) => !next.some((x) => x.id === o.id)),
    ...next,
  ];
  return {
    ...input,
    view: { ...input.view, ...plan.view },
    transforms: merge(input.transforms, plan.transforms),
    records: merge(input.records, plan.records),
    deferrals: merge(input.deferrals, plan.deferrals),
  };
}

function state(
  view: Partial<ViewRecord>,
  versions: SchemaVersionRecord[],
  over: { transforms?: ViewTransformRecord[]; deferrals?: ViewDeferralRecord[]; records?: ViewVersionRecord[] } = {},
): GenerationInput {
  const v: ViewRecord = {
    ...newView({ id: 'p', team_id: 't' } as ProjectRecord, NOW, {
      name: 'V',
      root: 'c',
      mode: 'auto',
      hint: null,
      output: [],
    }),
    collection_id: 'c',
    ...view,
  };
  return {
    view: v,
    transforms: over.transforms ?? [newTransform(v.id, null, NOW)],
    records: over.records ?? [],
    deferrals: over.deferrals ?? [],
    versions,
    now: NOW,
  };
}

const V1 = schemaVersion(1, 'settled', [
  ['id', 'number'],
  ['user.name', 'string'],
]);

test('a settled version: proposed schema, script on the transform, a version record; a second pass writes nothing', () => {
  const before = state({}, [V1, schemaVersion(2, 'candidate', [['id', 'number']])]);
  const plan = planGeneration(before);
  assert.deepEqual(plan.view.output_schema, [
    { name: 'id', type: 'number' },
    { name: 'user_name', type: 'string' },
  ]);
  assert.equal(plan.transforms.length, 1);
  assert.deepEqual([plan.transforms[0]!.status, plan.transforms[0]!.backfill_status], ['active', 'pending']);
  assert.deepEqual(
    plan.records.map((r) => [r.version, r.script_hash]),
    [[1, plan.transforms[0]!.script_hash]],
  );
  assert.deepEqual(plan.deferrals, [], 'a script serves everything: nothing waits');
  assert.equal(planGeneration(applied(before)).empty, true);
});

test('no settled version: one collecting_samples shape per version, counts kept up to date', () => {
  const before = state({}, [schemaVersion(1, 'candidate', [['id', 'number']])]);
  const after = applied(before);
  assert.deepEqual(
    after.deferrals.map((d) => [d.reason, d.schema_version, d.event_count, d.full_signature]),
    [['collecting_samples', 1, 10, 'sig-1']],
  );
  assert.equal(planGeneration(after).empty, true);
  const grown = planGeneration({ ...after, versions: [{ ...after.versions[0]!, row_count: 25 }] });
  assert.deepEqual(
    grown.deferrals.map((d) => [d.id, d.event_count]),
    [[after.deferrals[0]!.id, 25]],
  );
});

test('a question: the newest settled version waits with it, the transform stays queued; an answer resolves it', () => {
  const v = schemaVersion(1, 'settled', [
    ['author.user_id', 'number'],
    ['user.id', 'number'],
  ]);
  const before = state({ output_schema: [{ name: 'user_id', type: 'number' }] }, [v]);
  const after = applied(before);
  assert.equal(after.transforms[0]!.status, 'queued');
  const [d] = after.deferrals;
  assert.deepEqual(
    [d!.reason, d!.hint_reason, d!.hint_paths, d!.hint_requested_at],
    ['awaiting_script', 'ambiguous', ['$.author.user_id', '$.user.id'], NOW],
  );
  assert.equal(planGeneration(after).empty, true, 'the same question is not written again');
  const answered = applied({ ...after, view: { ...after.view, hint: 'user_id: $.user.id' } });
  assert.equal(answered.transforms[0]!.status, 'active');
  assert.deepEqual(
    [answered.deferrals[0]!.reason, answered.deferrals[0]!.transform_id],
    ['served', answered.transforms[0]!.id],
  );
});

test('generation failure: the transform in error, the shape generation_failed, and no retry until something changes', () => {
  const before = state({}, [
    schemaVersion(1, 'settled', [
      ['items', 'array'],
      ['items[]', 'object'],
    ]),
  ]);
  const after = applied(before);
  assert.equal(after.transforms[0]!.status, 'error');
  assert.match(after.transforms[0]!.error_message!, /no scalar field/);
  assert.deepEqual(
    after.deferrals.map((d) => d.reason),
    ['generation_failed'],
  );
  assert.equal(planGeneration(after).empty, true);
});

test('manual mode: nothing unless a person asked; an excluded version never waits again', () => {
  const manual = state({ transform_mode: 'manual' }, [V1]);
  assert.equal(planGeneration(manual).empty, true);
  const [t] = manual.transforms;
  assert.equal(
    applied({ ...manual, transforms: [{ ...t!, generation_requested_at: NOW }] }).transforms[0]!.status,
    'active',
  );

  const waiting = applied(state({}, [schemaVersion(1, 'candidate', [['id', 'number']])]));
  const excluded = { ...waiting.deferrals[0]!, resolved_at: NOW, excluded_at: NOW, exclusion_reason: 'test traffic' };
  assert.equal(planGeneration({ ...waiting, deferrals: [excluded] }).empty, true);
});

test('auto: a newer settled version regenerates the serving script and every settled version is recorded under it', () => {
  const first = applied(
    state(
      {
        output_schema: [
          { name: 'id', type: 'number' },
          { name: 'email', type: 'string' },
        ],
        mapping_policy_nullable_inputs: ['email'],
      },
      [V1],
    ),
  );
  const [t1] = first.transforms;
  assert.equal(t1!.status, 'active');
  const v2 = schemaVersion(2, 'settled', [
    ['id', 'number'],
    ['email', 'string'],
  ]);
  const second = applied({ ...first, versions: [V1, v2] });
  const [t2] = second.transforms;
  assert.notEqual(t2!.script_hash, t1!.script_hash, 'generated for version 2');
  assert.equal(
    t2!.backfill_status,
    'pending',
    'backfill state kept (still pending here; a completed one stays completed)',
  );
  assert.deepEqual(second.records.map((r) => [r.version, r.script_hash]).sort(), [
    [1, t2!.script_hash],
    [2, t2!.script_hash],
  ]);
  assert.equal(planGeneration(second).empty, true);
});
