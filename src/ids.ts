import { randomBytes, createHash } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** Random lowercase base36 string of `length` characters (unbiased: 252 = 7 * 36). */
export function randomToken(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 252 && out.length < length) out += ALPHABET[b % 36];
    }
  }
  return out;
}

/** Resource id prefixes. The spec fixes most; keys, teams, users, roles and servers are ours. */
export const idPrefix = {
  team: 'team_',
  user: 'usr_',
  role: 'rol_',
  key: 'key_',
  session: 'ses_',
  project: 'prj_',
  source: 'src_',
  collection: 'col_',
  ingestKey: 'ik_',
  schemaVersion: 'sch_',
  view: 'viw_',
  viewTransform: 'vtr_',
  viewVersion: 'vta_',
  viewDeferral: 'vsd_',
  // The spec gives no prefix for metrics or their series: ours (docs/metrics.md).
  metric: 'met_',
  metricSeries: 'mse_',
  lateDataFile: 'ldf_',
  // Pages have no prefix in the spec (ours, docs/pages.md); components and domains have theirs.
  page: 'pg_',
  component: 'comp_',
  domain: 'dom_',
  monitor: 'mon_',
  alert: 'alr_',
  notificationChannel: 'nch_',
  // Fixed by the spec (api-2: Pull `pul_`); checks get ours (docs/pulls-and-checks.md).
  pull: 'pul_',
  check: 'chk_',
} as const;

export type IdKind = keyof typeof idPrefix;

/** How each kind of id is named in messages. */
const ID_NAMES: Record<IdKind, string> = {
  team: 'team',
  user: 'user',
  role: 'role',
  key: 'API key',
  session: 'session',
  project: 'project',
  source: 'source',
  collection: 'collection',
  ingestKey: 'ingest key',
  schemaVersion: 'schema version',
  view: 'view',
  viewTransform: 'view transform',
  viewVersion: 'view version',
  viewDeferral: 'waiting shape',
  metric: 'metric',
  metricSeries: 'metric series',
  lateDataFile: 'late data file',
  page: 'page',
  component: 'component',
  domain: 'domain',
  monitor: 'monitor',
  alert: 'alert',
  notificationChannel: 'notification channel',
  pull: 'pull',
  check: 'check',
};

const ID_BODY = 20;

export function newId(kind: IdKind): string {
  return idPrefix[kind] + randomToken(ID_BODY);
}

/** JSON Schema for an id of `kind` in a body or query, with a message that says what to fix. */
export function idSchema(kind: IdKind): Record<string, unknown> {
  return {
    type: 'string',
    pattern: `^${idPrefix[kind]}[0-9a-z]{${ID_BODY}}$`,
    errorHint: `must be ${/^[aeiou]/i.test(ID_NAMES[kind]) ? 'an' : 'a'} ${ID_NAMES[kind]} id: "${idPrefix[kind]}" followed by ${ID_BODY} lowercase letters or digits`,
  };
}

/** Longest path parameter looked up as an id; a longer one is refused as invalid input (400). */
export const MAX_PATH_ID_LENGTH = 256;

/**
 * JSON Schema for a path parameter naming a resource of `kind`. Only its length is validated: a
 * value that is not an id of that kind names nothing and answers 404 like an id that does not exist
 * (dispatch checks it with `isId`), so callers never need to know the shape of our ids. `pathId`
 * marks the parameter for that check.
 */
export function pathIdSchema(kind: IdKind): Record<string, unknown> {
  return {
    type: 'string',
    maxLength: MAX_PATH_ID_LENGTH,
    pathId: kind,
    description: `${idLabel(kind)} id ("${idPrefix[kind]}…"); any other value names nothing (404)`,
    errorHint: `must be at most ${MAX_PATH_ID_LENGTH} characters`,
  };
}

/** Whether `value` has the shape of an id of `kind` (it may still name nothing). */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = idPrefix[kind];
  return (
    value.length === prefix.length + ID_BODY &&
    value.startsWith(prefix) &&
    ID_BODY_PATTERN.test(value.slice(prefix.length))
  );
}

const ID_BODY_PATTERN = /^[0-9a-z]+$/;

/** The kind as the start of a message: "Project", "API key", "Ingest key". */
export function idLabel(kind: IdKind): string {
  const name = ID_NAMES[kind];
  return name[0]!.toUpperCase() + name.slice(1);
}

export function isIdKind(value: unknown): value is IdKind {
  return typeof value === 'string' && Object.hasOwn(idPrefix, value);
}

/** Secrets are high-entropy random strings, so a plain SHA-256 is a safe lookup hash for them. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}
