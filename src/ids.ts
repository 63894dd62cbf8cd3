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
};

const ID_BODY = 20;

export function newId(kind: IdKind): string {
  return idPrefix[kind] + randomToken(ID_BODY);
}

/** JSON Schema for a path parameter holding an id of `kind`, with a message that says what to fix. */
export function idSchema(kind: IdKind): Record<string, unknown> {
  return {
    type: 'string',
    pattern: `^${idPrefix[kind]}[0-9a-z]{${ID_BODY}}$`,
    errorHint: `must be ${/^[aeiou]/i.test(ID_NAMES[kind]) ? 'an' : 'a'} ${ID_NAMES[kind]} id: "${idPrefix[kind]}" followed by ${ID_BODY} lowercase letters or digits`,
  };
}

/** Secrets are high-entropy random strings, so a plain SHA-256 is a safe lookup hash for them. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}
