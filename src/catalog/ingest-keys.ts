import { iso, type Clock } from '../clock.js';
import { hashSecret, newId, randomToken } from '../ids.js';
import type { Store } from '../store/db.js';
import { RefIndex, ScopedTable } from '../store/scoped-table.js';
import type { IngestKeyRecord, SourceRecord } from './records.js';

/** Prefix of every ingest key secret; publishable, so it is recognisable in client-side code. */
export const INGEST_KEY_PREFIX = 'pik_';

/** How a stored key is shown after creation: the prefix, an ellipsis and the last four characters. */
export function maskedIngestKey(key: IngestKeyRecord): string {
  return `${INGEST_KEY_PREFIX}…${key.last4}`;
}

/**
 * Ingest keys, stored under their source (found by id alone through the table's id index). Only the
 * SHA-256 of a secret is kept (`bySecret`: hash → `sourceId/keyId`), so the secret is shown once, at creation.
 */
export class IngestKeysRepo {
  readonly table: ScopedTable<IngestKeyRecord>;
  readonly bySecret: RefIndex;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
  ) {
    this.table = new ScopedTable(store, 'ingest_keys', 'ingest_key_source');
    this.bySecret = new RefIndex(store, 'ingest_keys_by_secret');
  }

  get(sourceId: string, id: string): IngestKeyRecord | undefined {
    return this.table.get(sourceId, id);
  }

  byId(id: string): IngestKeyRecord | undefined {
    return this.table.byId(id);
  }

  /** The key whose secret is `secret` (ingest authentication), or undefined (unknown or deleted). */
  findBySecret(secret: string): IngestKeyRecord | undefined {
    return this.bySecret.find(this.table, hashSecret(secret));
  }

  list(sourceId: string): IngestKeyRecord[] {
    return this.table.list(sourceId);
  }

  /** Create an active key for `source`; the secret is returned here and never again. */
  async create(source: SourceRecord): Promise<{ key: IngestKeyRecord; secret: string }> {
    const secret = INGEST_KEY_PREFIX + randomToken(32);
    const key: IngestKeyRecord = {
      id: newId('ingestKey'),
      team_id: source.team_id,
      project_id: source.project_id,
      source_id: source.id,
      secret_hash: hashSecret(secret),
      last4: secret.slice(-4),
      status: 'active',
      created_at: iso(this.clock.now()),
    };
    await this.store.transaction(() => {
      // 32 base36 characters make a collision practically impossible; refuse rather than alias one.
      if (this.bySecret.get(key.secret_hash)) throw new Error('ingest key secret collision');
      this.table.put(source.id, key);
      this.bySecret.putRef(key.secret_hash, source.id, key.id);
    });
    return { key, secret };
  }

  /** Remove a key; `findBySecret` stops finding it as soon as this resolves. */
  async destroy(key: IngestKeyRecord): Promise<void> {
    await this.store.transaction(() => {
      this.table.remove(key.source_id, key.id);
      this.bySecret.remove(key.secret_hash);
    });
  }
}
