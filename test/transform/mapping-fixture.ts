import assert from 'node:assert/strict';
import vm from 'node:vm';
import { describeRecord } from '../../src/schema/fingerprint.js';
import type { Shape } from '../../src/schema/shape.js';
import { fieldsOf, type VersionField } from '../../src/schema/versions.js';
import type { MappingPolicy, MappingVersion } from '../../src/transform/mapping-types.js';

/** Version fields as the schema book would store them for `record` (default identity rules). */
export function fieldsOfRecord(record: unknown): VersionField[] {
  const shape = describeRecord({ opaquePaths: [], trackedPaths: [], maxDepth: 10 }, record);
  assert.notEqual(typeof shape, 'number');
  return fieldsOf((shape as Shape).entries);
}

/** A version from `[path, type]` pairs (rendered paths, as versions store them). */
export function versionOf(fields: Array<[string, string]> | VersionField[], number = 3): MappingVersion {
  const list = fields.map((f) => (Array.isArray(f) ? { path: f[0], type: f[1], optional: false } : f));
  return { id: `sv_${number}`, number, fields: list };
}

export function policyOf(p: Partial<MappingPolicy> = {}): MappingPolicy {
  return { output_bindings: {}, fallback_groups: [], nullable_inputs: [], allow_drops: false, ...p };
}

/** Run a generated script the way a user's pasted copy would run: plain JS, `transform` its entry. */
export function runScript(script: string, record: unknown): Record<string, unknown> {
  const transform = new vm.Script(script + '\ntransform', { filename: 'transform.js' }).runInNewContext({}) as (
    r: unknown,
    ctx: unknown,
  ) => unknown;
  // Through JSON: the result's objects belong to the script's realm.
  return JSON.parse(JSON.stringify(transform(record, {}))) as Record<string, unknown>;
}
