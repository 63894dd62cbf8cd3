import { isValidSlug, DEFAULT_COLLECTION_SLUG, SLUG_PATTERN } from '../catalog/collection-slug.js';
import type { CollectionRecord, IngestKeyRecord, SourceRecord } from '../catalog/records.js';
import { GLOBAL } from '../accounts/repo.js';
import { ApiError, invalidField, toApiError } from '../errors.js';
import type { IngestDeps } from './ingest-deps.js';
import { type IngestGate, spoolFull } from './backpressure.js';
import { parseBatch, stripBom, type ParsedBatch } from './framing.js';
import { IdempotencyStore, requestHash, type IdempotentResult } from './idempotency.js';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from './limits.js';
import { reasonFor } from '../telemetry/pipeline-telemetry.js';
import type { PipelineErrorReason } from '../telemetry/pipeline-telemetry.js';
import { VerifiedCache } from './verified-cache.js';
import { ingestRecords, ingestRequests } from '../self-metrics/registry.js';

/** Bound on remembered secrets and collection slugs (cleared past it; they are only shortcuts). */
const MAX_REMEMBERED = 10_000;

/** Where an authenticated ingest request (or an in-process producer through the record sink) writes. */
export interface IngestTarget {
  /** The ingest key that wrote, or null for an in-process producer (record sink). */
  keyId: string | null;
  /** Namespace of idempotency keys: the ingest key id, or `sink:<source id>:<producer>`. */
  scope: string;
  projectId: string;
  source: SourceRecord;
  slug: string;
}

export interface IngestOutcome {
  accepted: number;
  /** The result of an earlier request with the same idempotency key, not spooled again. */
  replayed: boolean;
}

export interface AcceptOptions {
  /** The sender declared NDJSON (`application/x-ndjson`). */
  ndjson: boolean;
  /** Idempotency key, already checked with `checkIdempotencyKey`. */
  idempotencyKey?: string | undefined;
  /** Wait for this before appending (keeps a WebSocket connection's frames in order). */
  after?: Promise<void> | undefined;
  /** Called once this body's spool entry is queued, or it is certain none will be (refused, replayed). */
  queued?: (() => void) | undefined;
}

/**
 * The transport-independent ingest path shared by HTTP and WebSocket: authenticate the publishable
 * key (spec rule 9: it only permits writing into its source), admit, validate, spool durably,
 * record activity and telemetry. Every refusal is counted under its PipelineErrorReason here or
 * through `countError`.
 */
export class IngestCore {
  readonly idempotency: IdempotencyStore;
  /** Control-plane records read on every request, decoded once while their bytes stay the same. */
  private readonly records = new VerifiedCache();
  /** secret → where its key record lives (skips hashing the secret and the secret index). */
  private readonly keyRefs = new Map<string, { sourceId: string; keyId: string; hash: string }>();
  /** `<source id>/<slug>` → collection id. */
  private readonly collectionIds = new Map<string, string>();

  /**
   * Bumped after every write transaction of this process commits (lmdb's `aftercommit`, fired
   * before any commit promise resolves). A control-plane change — key deleted or disabled, source or
   * project deleted, team suspended — is acknowledged only after its commit, so a check made at
   * the current generation agrees with re-reading the records on every acknowledged change:
   * requests between two commits share one check, and the first request after a commit re-reads.
   * (Every write goes through async lmdb transactions; a `transactionSync` would need a bump too.)
   */
  private generation = 0;
  /**
   * secret → slug → the target verified at `generation`. Two levels, not one joined key: the
   * query's strings are the same objects request after request (http-front remembers parsed query
   * strings), so their hashes are cached, where a joined key was a new string to flatten and hash.
   */
  private readonly verified = new Map<string, Map<string, { generation: number; target: IngestTarget }>>();
  private verifiedCount = 0;
  /** Target → its collection verified live at `generation` (targets are kept while they verify the same). */
  private readonly liveCollections = new WeakMap<IngestTarget, { generation: number; collection: CollectionRecord }>();

  constructor(
    private readonly s: IngestDeps,
    readonly gate: IngestGate,
  ) {
    this.idempotency = new IdempotencyStore(s.store, s.clock);
    s.store.root.on('aftercommit', () => {
      this.generation++;
    });
  }

  /** Authenticate `secret` and pick the collection slug; throws the refusal (already counted). */
  resolve(secret: string | undefined, slug: string | undefined): IngestTarget {
    const chosen = slug ?? DEFAULT_COLLECTION_SLUG;
    const bySlug = secret === undefined ? undefined : this.verified.get(secret);
    const hit = bySlug?.get(chosen);
    if (hit) {
      if (hit.generation === this.generation) return hit.target;
      // Verified again after a commit: keep the same target object when nothing it says changed
      // (the source record is the same object while its bytes are), so what is keyed by it stays.
      const target = this.verify(secret, chosen);
      const old = hit.target;
      if (target.keyId !== old.keyId || target.projectId !== old.projectId || target.source !== old.source)
        hit.target = target;
      hit.generation = this.generation;
      return hit.target;
    }
    // Only verified secrets (and valid slugs) are remembered.
    const target = this.verify(secret, chosen);
    if (this.verifiedCount >= MAX_REMEMBERED) {
      this.verified.clear();
      this.verifiedCount = 0;
    }
    let slugs = this.verified.get(secret!);
    if (!slugs) this.verified.set(secret!, (slugs = new Map()));
    slugs.set(chosen, { generation: this.generation, target });
    this.verifiedCount++;
    return target;
  }

  private verify(secret: string | undefined, chosen: string): IngestTarget {
    const { s } = this;
    if (!secret)
      throw this.refuse(
        null,
        new ApiError('auth_missing_credentials', 'Send the ingest key in the URL: /ingest?key=<ingest key>'),
      );
    const key = this.findKey(secret);
    if (!key)
      throw this.refuse(
        null,
        new ApiError('auth_invalid_credentials', 'The ingest key is not valid (unknown or deleted)'),
      );
    if (key.status !== 'active')
      throw this.refuse(key.project_id, new ApiError('auth_invalid_credentials', `The ingest key is ${key.status}`));
    const team = this.records.get(s.accounts.teams.db, [GLOBAL, key.team_id], `team:${key.team_id}`);
    if (!team || team.status !== 'active' || team.deleted_at) {
      const why = !team ? 'gone' : team.deleted_at ? 'scheduled for deletion' : team.status;
      throw this.refuse(
        key.project_id,
        new ApiError('team_not_active', `The team is ${why}; ingest is stopped until it is active again`),
      );
    }
    // A key lives in its source, a source in its project, a project in its team.
    const source = this.liveSource(key.team_id, key.project_id, key.source_id);
    this.checkSlug(key.project_id, chosen, 'query.collection');
    return { keyId: key.id, scope: key.id, projectId: key.project_id, source, slug: chosen };
  }

  /**
   * The target of an in-process producer (the record sink): no key, but the same team, project,
   * source and slug checks as `resolve`, read fresh every time. Throws the refusal (counted).
   */
  resolveSource(projectId: string, sourceId: string, slug: string, producer: string): IngestTarget {
    const project = this.s.projects.byId(projectId);
    if (!project || project.deleted_at)
      throw this.refuse(
        projectId,
        new ApiError('source_deleted', `Project ${projectId} is deleted or scheduled for deletion`),
      );
    const team = this.records.get(this.s.accounts.teams.db, [GLOBAL, project.team_id], `team:${project.team_id}`);
    if (!team || team.status !== 'active' || team.deleted_at) {
      const why = !team ? 'gone' : team.deleted_at ? 'scheduled for deletion' : team.status;
      throw this.refuse(
        projectId,
        new ApiError('team_not_active', `The team is ${why}; ingest is stopped until it is active again`),
      );
    }
    const source = this.liveSource(project.team_id, projectId, sourceId);
    this.checkSlug(projectId, slug, 'collection');
    return { keyId: null, scope: `sink:${sourceId}:${producer}`, projectId, source, slug };
  }

  /** The source, live, in its live project; throws `source_deleted` (counted) otherwise. */
  private liveSource(teamId: string, projectId: string, sourceId: string): SourceRecord {
    const { s } = this;
    const source = this.records.get(s.sources.table.db, [projectId, sourceId], `src:${sourceId}`);
    if (!source || source.deleted_at)
      throw this.refuse(
        projectId,
        new ApiError('source_deleted', `Source ${sourceId} is deleted or scheduled for deletion`),
      );
    const project = this.records.get(s.projects.table.db, [teamId, projectId], `prj:${projectId}`);
    if (!project || project.deleted_at)
      throw this.refuse(
        projectId,
        new ApiError('source_deleted', `Project ${projectId} is deleted or scheduled for deletion`),
      );
    return source;
  }

  private checkSlug(projectId: string, slug: string, field: string): void {
    if (!isValidSlug(slug))
      throw this.refuse(
        projectId,
        invalidField(field, `must be a collection slug: 1 to 64 characters matching ${SLUG_PATTERN}`),
      );
  }

  /** Refuse early (before reading a body) when `bytes` more cannot be admitted; throws counted. */
  admit(target: IngestTarget, bytes: number, idempotencyKey?: string): void {
    // A retry whose result is stored is answered from it (no spooling), even while the gate refuses.
    if (idempotencyKey !== undefined && this.idempotency.has(`${target.scope}:${idempotencyKey}`)) return;
    try {
      this.gate.check(0, bytes);
      // A collection not written since start is checked once its id is known (`write`).
      const known = this.knownCollection(target);
      if (known) this.gate.checkBacklog(known.id);
    } catch (err) {
      throw this.refuse(target.projectId, toApiError(err));
    }
  }

  /**
   * Validate `body` (decompressed) and spool it durably as one entry. Resolves only after the LMDB
   * commit is flushed. With an idempotency key, a repeat returns the first result without spooling.
   */
  async accept(target: IngestTarget, body: Buffer, opts: AcceptOptions): Promise<IngestOutcome> {
    body = stripBom(body);
    const receivedAt = this.s.clock.now();
    this.gate.hold(body.length);
    try {
      const run = (stage?: (r: IdempotentResult) => void) => this.spoolBody(target, body, opts, receivedAt, stage);
      let outcome: IngestOutcome;
      if (opts.idempotencyKey !== undefined) {
        const { result, replayed } = await this.idempotency.run(
          `${target.scope}:${opts.idempotencyKey}`,
          requestHash(target.slug, body),
          run,
        );
        outcome = { accepted: result.accepted, replayed };
      } else {
        outcome = { accepted: (await run()).accepted, replayed: false };
      }
      if (outcome.replayed) {
        this.s.activity.touch(target.projectId, receivedAt);
        if (target.keyId !== null) this.s.activity.touch(target.keyId, receivedAt);
      } else this.accepted(target, receivedAt, outcome.accepted);
      return outcome;
    } catch (err) {
      throw this.refuse(target.projectId, toApiError(err));
    } finally {
      this.gate.release(body.length);
      opts.queued?.();
    }
  }

  /**
   * `accept` for the common single-request case, without a promise per request: `done(null,
   * accepted)` once the spool commit is flushed, `done(refusal)` (already counted) otherwise. Takes
   * the callback path when there is no idempotency key and the collection is known; else it runs
   * `accept`. Same checks, same order of effects, same refusals.
   */
  acceptThen(
    target: IngestTarget,
    body: Buffer,
    opts: AcceptOptions,
    done: (err: ApiError | null, accepted: number, replayed: boolean) => void,
  ): void {
    const known =
      opts.idempotencyKey === undefined && !opts.after && !opts.queued ? this.knownCollection(target) : undefined;
    if (!known) {
      this.accept(target, body, opts).then(
        (outcome) => done(null, outcome.accepted, outcome.replayed),
        (err: unknown) => done(toApiError(err), 0, false),
      );
      return;
    }
    body = stripBom(body);
    const receivedAt = this.s.clock.now();
    const held = body.length;
    this.gate.hold(held);
    let parsed: ParsedBatch;
    try {
      parsed = parseBatch(body, opts.ndjson);
      this.gate.check(parsed.records, 0);
      this.gate.checkBacklog(known.id);
    } catch (err) {
      this.gate.release(held);
      return done(this.refuse(target.projectId, toApiError(err)), 0, false);
    }
    const records = parsed.records;
    this.s.spool.appendThen(
      {
        collection_id: known.id,
        project_id: target.projectId,
        received_at: receivedAt,
        records,
        format: parsed.format,
        body,
      },
      undefined,
      (err) => {
        this.gate.release(held);
        if (err !== null) return done(this.refuse(target.projectId, this.storageFailure(target, err)), 0, false);
        this.accepted(target, receivedAt, records);
        done(null, records, false);
      },
    );
  }

  /** Activity and telemetry of a request whose records were stored (not replayed). */
  private accepted(target: IngestTarget, receivedAt: number, records: number): void {
    this.s.activity.touch(target.projectId, receivedAt);
    if (target.keyId !== null) this.s.activity.touch(target.keyId, receivedAt);
    this.s.telemetry.recordAccepted(target.projectId, records);
    ingestRequests.inc({ outcome: 'accepted' });
    ingestRecords.inc({ outcome: 'accepted' }, records);
  }

  /**
   * Parse, admit and issue the spool put. Synchronous up to the put when the collection is known
   * and nothing must be waited for (the common case: no extra promise per request); throws the
   * parse and admission refusals synchronously.
   */
  private spoolBody(
    target: IngestTarget,
    body: Buffer,
    opts: AcceptOptions,
    receivedAt: number,
    stage?: (r: IdempotentResult) => void,
  ): Promise<IdempotentResult> {
    const parsed = parseBatch(body, opts.ndjson);
    this.gate.check(parsed.records, 0);
    const known = this.knownCollection(target);
    if (known && !opts.after) return this.write(target, known, parsed, body, opts, receivedAt, stage);
    return (async () => {
      const collection = known ?? (await this.ensureCollection(target));
      if (opts.after) await opts.after;
      return this.write(target, collection, parsed, body, opts, receivedAt, stage);
    })();
  }

  private write(
    target: IngestTarget,
    collection: CollectionRecord,
    parsed: ParsedBatch,
    body: Buffer,
    opts: AcceptOptions,
    receivedAt: number,
    stage?: (r: IdempotentResult) => void,
  ): Promise<IdempotentResult> {
    const result = { accepted: parsed.records };
    try {
      this.gate.checkBacklog(collection.id);
    } catch (err) {
      return Promise.reject(err);
    }
    let written: Promise<number>;
    try {
      written = this.s.spool.append(
        {
          collection_id: collection.id,
          project_id: target.projectId,
          received_at: receivedAt,
          records: parsed.records,
          format: parsed.format,
          body,
        },
        stage ? () => stage(result) : undefined,
      );
    } catch (err) {
      return Promise.reject(this.storageFailure(target, err));
    }
    // The put is issued synchronously by append: later frames may queue behind it now.
    opts.queued?.();
    return written.then(
      () => result,
      (err: unknown) => {
        throw this.storageFailure(target, err);
      },
    );
  }

  private storageFailure(target: IngestTarget, err: unknown): ApiError {
    // A refusal from the spool (the collection was dropped meanwhile) is not a storage failure.
    if (err instanceof ApiError) return err;
    this.gate.storageFailed();
    this.s.log.warn({ err, project_id: target.projectId }, 'spool write failed');
    const refusal = spoolFull('spool_full_storage_write');
    return new ApiError(refusal.code, refusal.message, {
      headers: refusal.headers,
      details: refusal.details,
      cause: err,
    });
  }

  /** The key whose secret is `secret`, exactly as `findBySecret` would answer, without hashing each time. */
  private findKey(secret: string): IngestKeyRecord | undefined {
    const ref = this.keyRefs.get(secret);
    if (ref) {
      const rec = this.records.get(this.s.ingestKeys.table.db, [ref.sourceId, ref.keyId], `ik:${ref.keyId}`);
      if (rec && rec.secret_hash === ref.hash) return rec;
      this.keyRefs.delete(secret);
    }
    const found = this.s.ingestKeys.findBySecret(secret);
    if (found) {
      if (this.keyRefs.size >= MAX_REMEMBERED) this.keyRefs.clear();
      this.keyRefs.set(secret, { sourceId: found.source_id, keyId: found.id, hash: found.secret_hash });
    }
    return found;
  }

  /** The target's live collection when its id is remembered (re-read and checked every time), else undefined. */
  private knownCollection(target: IngestTarget): CollectionRecord | undefined {
    const live = this.liveCollections.get(target);
    if (live && live.generation === this.generation) return live.collection;
    const ref = target.source.id + '/' + target.slug;
    const id = this.collectionIds.get(ref);
    if (!id) return undefined;
    const c = this.records.get(this.s.collections.table.db, [target.source.id, id], 'col:' + id);
    if (c && c.slug === target.slug && !c.deleted_at) {
      this.liveCollections.set(target, { generation: this.generation, collection: c });
      return c;
    }
    this.collectionIds.delete(ref);
    return undefined;
  }

  /** Find or create the target's collection (first data for a slug) and remember its id. */
  private async ensureCollection(target: IngestTarget): Promise<CollectionRecord> {
    const known = this.s.collections.bySlug(target.source.id, target.slug);
    const c = known && !known.deleted_at ? known : await this.s.collections.ensure(target.source, target.slug);
    if (this.collectionIds.size >= MAX_REMEMBERED) this.collectionIds.clear();
    this.collectionIds.set(target.source.id + '/' + target.slug, c.id);
    return c;
  }

  /**
   * Count a refusal (body too large, bad encoding …) once: the same error passing through several
   * layers on its way to the answer is not counted again. Returns it.
   */
  countError(projectId: string | null, err: ApiError, reason: PipelineErrorReason = reasonFor(err.code)): ApiError {
    if (COUNTED.has(err)) return err;
    COUNTED.add(err);
    this.s.telemetry.recordError(projectId, reason);
    ingestRequests.inc({ outcome: 'refused', reason });
    if (err.status >= 500) this.s.log.warn({ code: err.code, project_id: projectId, err: err.cause }, 'ingest refused');
    else this.s.log.debug({ code: err.code, project_id: projectId }, 'ingest refused');
    return err;
  }

  private refuse(projectId: string | null, err: ApiError): ApiError {
    return this.countError(projectId, err);
  }
}

const COUNTED = new WeakSet<ApiError>();

/** An Idempotency-Key header or stream name must be 1 to 255 visible ASCII characters. */
export function checkIdempotencyKey(value: string, field: string): string {
  if (value.length === 0 || value.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(value)) {
    throw invalidField(field, `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters`);
  }
  return value;
}
