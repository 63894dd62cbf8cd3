import type { SchemaSettings } from '../catalog/records.js';

/** The rules a fingerprint is taken under (spec: Collection, the identity `schema_*` fields). */
export interface FingerprintRules {
  opaquePaths: string[][];
  trackedPaths: string[][];
  maxDepth: number;
}

/** Spec range of schema_max_depth; a deeper value cannot come from the API but is clamped anyway. */
export const MAX_DEPTH_LIMIT = 10;

export function rulesOf(
  settings: Pick<SchemaSettings, 'schema_opaque_paths' | 'schema_tracked_paths' | 'schema_max_depth'>,
): FingerprintRules {
  return {
    opaquePaths: settings.schema_opaque_paths,
    trackedPaths: settings.schema_tracked_paths,
    maxDepth: settings.schema_max_depth,
  };
}

/** Stable text of a rule set, to tell whether two rule sets fingerprint alike (re-key detection). */
export function rulesKey(r: FingerprintRules): string {
  const norm = (paths: string[][]) => paths.map((p) => JSON.stringify(p)).sort();
  return JSON.stringify({ o: norm(r.opaquePaths), t: norm(r.trackedPaths), d: r.maxDepth });
}

/** Join key segments into one lookup string (NUL never needs to appear in a real key to work). */
export function ruleKeyOf(path: readonly string[]): string {
  return path.join('\u0000');
}

/** Rules compiled to sets keyed by `ruleKeyOf`. */
export interface CompiledRules {
  maxDepth: number;
  opaque: Set<string>;
  tracked: Set<string>;
  /**
   * For each path on the way to a tracked path (the tracked path's proper prefixes), the child keys
   * that continue towards one: under an opaque path only these children are visited.
   */
  towardsTracked: Map<string, Set<string>>;
}

export function compileRules(r: FingerprintRules): CompiledRules {
  const opaque = new Set(r.opaquePaths.map(ruleKeyOf));
  const tracked = new Set(r.trackedPaths.map(ruleKeyOf));
  const towardsTracked = new Map<string, Set<string>>();
  for (const path of r.trackedPaths) {
    for (let i = 0; i < path.length; i++) {
      const prefix = ruleKeyOf(path.slice(0, i));
      let keys = towardsTracked.get(prefix);
      if (!keys) towardsTracked.set(prefix, (keys = new Set()));
      keys.add(path[i]!);
    }
  }
  return { maxDepth: Math.max(1, Math.min(MAX_DEPTH_LIMIT, Math.floor(r.maxDepth))), opaque, tracked, towardsTracked };
}
