import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { systemClock } from '../../src/clock.js';
import { ApiError } from '../../src/errors.js';
import { LaneAborted } from '../../src/pipeline/collection-lane.js';
import { RunnerCounters } from '../../src/pipeline/counters.js';
import { BatchError } from '../../src/pipeline/failures.js';
import {
  classifyFailure,
  POISON_ATTEMPTS,
  RETRY_MAX_MS,
  RETRY_MIN_MS,
  StepRetry,
  type FailureClass,
  type StepOutcome,
} from '../../src/pipeline/step-retry.js';
import { SchemaService, StaleBatchError } from '../../src/schema/schema-service.js';
import { Spool, type SpoolLease } from '../../src/spool/spool.js';
import { Store } from '../../src/store/db.js';

/** The pipeline's failure policy (step-retry.ts) on a real spool and schema service, driven by failure kind. */

const live = { laneLive: true, collectionExists: true };
const wrapped = (err: Error) => new ApiError('server_error', 'storage failed during transaction', { cause: err });
const diskFull = Object.assign(new Error('write failed'), { code: 'ENOSPC' });

describe('step retry: classifyFailure', () => {
  const cases: {
    name: string;
    err: unknown;
    at?: { laneLive: boolean; collectionExists: boolean };
    kind: FailureClass;
  }[] = [
    { name: 'stale book', err: new StaleBatchError('col_a'), kind: 'rerun' },
    { name: 'stale book wrapped by the store', err: wrapped(new StaleBatchError('col_a')), kind: 'rerun' },
    { name: 'an earlier batch of the lane failed', err: new LaneAborted('col_a'), kind: 'rerun' },
    {
      name: 'any error once the lane slot is no longer live',
      err: new Error('boom'),
      at: { laneLive: false, collectionExists: true },
      kind: 'rerun',
    },
    {
      name: 'stale wins over a missing collection',
      err: new StaleBatchError('col_a'),
      at: { laneLive: true, collectionExists: false },
      kind: 'rerun',
    },
    { name: 'source_deleted', err: new ApiError('source_deleted', 'gone'), kind: 'gone' },
    {
      name: 'the collection is no longer found',
      err: new Error('boom'),
      at: { laneLive: true, collectionExists: false },
      kind: 'gone',
    },
    { name: 'environmental worker failure', err: new BatchError('environmental', 'no space'), kind: 'environmental' },
    { name: 'ENOSPC code', err: diskFull, kind: 'environmental' },
    { name: 'ENOSPC wrapped by the store', err: wrapped(diskFull), kind: 'environmental' },
    {
      name: 'too many open files (message only)',
      err: new Error('EMFILE: too many open files'),
      kind: 'environmental',
    },
    { name: 'the batch’s own worker failure', err: new BatchError('batch', 'bad record'), kind: 'batch' },
    { name: 'a plain error', err: new Error('boom'), kind: 'batch' },
    { name: 'another catalogue error', err: new ApiError('server_error', 'storage failed'), kind: 'batch' },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.kind}`, () => assert.equal(classifyFailure(c.err, c.at ?? live), c.kind));
  }
});

describe('step retry: withStepRetry', () => {
  /** A real spool and schema service in a scratch directory, and the policy over them. */
  async function harness(t: { after(fn: () => Promise<void>): void }, opts: { exists?: boolean } = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-step-retry-'));
    const store = new Store(dir);
    const spool = new Spool(store);
    const schema = new SchemaService(store, systemClock, pino({ level: 'silent' }), dir);
    t.after(async () => {
      schema.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const counters = new RunnerCounters();
    const waits: number[] = [];
    const errors: string[] = [];
    const policy = new StepRetry({
      spool,
      stageUnprocessable: (e) => schema.stageUnprocessable(e),
      log: pino({ level: 'silent' }),
      telemetry: { recordError: (projectId, reason) => void errors.push(`${projectId}:${reason}`) },
      counters,
      collectionExists: () => opts.exists ?? true,
      stopped: () => false,
      wakeIn: (ms) => void waits.push(ms),
    });
    async function append(entries: number, records = 4): Promise<void> {
      for (let i = 0; i < entries; i++) {
        const body = new TextEncoder().encode(
          Array.from({ length: records }, (_, k) => JSON.stringify({ i, k })).join('\n'),
        );
        await spool.append({
          collection_id: 'col_a',
          project_id: 'prj_a',
          received_at: Date.now(),
          records,
          format: 'ndjson',
          body,
        });
      }
    }
    function lease(): SpoolLease {
      const l = spool.lease(1000, (id) => policy.limitOf(id));
      assert.ok(l, 'a lease is available');
      return l;
    }
    const fail = (l: SpoolLease, err: unknown, laneLive = true): Promise<StepOutcome> =>
      policy.withStepRetry(
        l,
        () => Promise.reject(err),
        async () => ({ laneLive }),
      );
    return { spool, schema, counters, waits, errors, policy, append, lease, fail };
  }

  it('a step that passes commits, and nothing is given back or counted as failed', async (t) => {
    const h = await harness(t);
    await h.append(1);
    const l = h.lease();
    assert.equal(
      await h.policy.withStepRetry(
        l,
        () => h.spool.complete(l),
        async () => assert.fail('no abandon on success'),
      ),
      'committed',
    );
    assert.equal(h.spool.pendingRecords(), 0);
    assert.equal(h.counters.count.failed, 0);
    assert.equal(h.policy.gate('col_a'), undefined);
  });

  it('rerun kinds give the lease back at once: no back-off, not a failure', async (t) => {
    const h = await harness(t);
    await h.append(1);
    for (const [err, laneLive] of [
      [wrapped(new StaleBatchError('col_a')), true],
      [new LaneAborted('col_a'), true],
      [new Error('boom'), false],
    ] as const) {
      const l = h.lease();
      assert.equal(await h.fail(l, err, laneLive), 'rerun');
    }
    assert.equal(h.counters.count.reruns, 3);
    assert.equal(h.counters.count.rerunRecords, 12);
    assert.equal(h.counters.count.failed, 0);
    assert.deepEqual(h.waits, []);
    assert.equal(h.policy.gate('col_a'), undefined);
    assert.equal(h.policy.backingOff(), false);
    assert.equal(h.lease().firstSeq, 1, 'the same entry is leased again');
  });

  it('a collection being destroyed: the lease is dropped, no retry', async (t) => {
    for (const [err, exists] of [
      [new ApiError('source_deleted', 'gone'), true],
      [new Error('boom'), false],
    ] as const) {
      const h = await harness(t, { exists });
      await h.append(1);
      assert.equal(await h.fail(h.lease(), err), 'dropped');
      assert.equal(h.counters.count.failed, 0);
      assert.deepEqual(h.waits, []);
      assert.equal(h.policy.backingOff(), false);
    }
  });

  it('environmental failures back off (doubling, capped) and are never set aside', async (t) => {
    const h = await harness(t);
    await h.append(1);
    const outcomes: StepOutcome[] = [];
    for (let i = 0; i < POISON_ATTEMPTS + 6; i++)
      outcomes.push(await h.fail(h.lease(), i % 2 ? diskFull : new BatchError('environmental', 'no space')));
    assert.ok(
      outcomes.every((o) => o === 'retry'),
      outcomes.join(),
    );
    assert.deepEqual(h.waits, [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    assert.equal(h.waits[0], RETRY_MIN_MS);
    assert.equal(h.waits.at(-1), RETRY_MAX_MS);
    assert.equal(h.counters.count.failed, POISON_ATTEMPTS + 6);
    assert.equal(h.policy.gate('col_a'), 0, 'backing off: nothing leased');
    assert.deepEqual(h.schema.unprocessable('col_a'), []);
    assert.equal(h.spool.pendingRecords(), 4, 'the entry stays in the spool');
  });

  it('a lone entry that keeps failing is set aside after POISON_ATTEMPTS; a pass in between starts the count over', async (t) => {
    const h = await harness(t);
    await h.append(1);
    assert.equal(await h.fail(h.lease(), new BatchError('batch', 'bad')), 'retry');
    // Only failures in a row count: a committed batch of the collection ends the run.
    const l = h.lease();
    assert.equal(
      await h.policy.withStepRetry(
        l,
        async () => undefined,
        async () => ({ laneLive: true }),
      ),
      'committed',
    );
    h.spool.release(l);
    const outcomes: StepOutcome[] = [];
    for (let i = 0; i < POISON_ATTEMPTS; i++)
      outcomes.push(await h.fail(h.lease(), new BatchError('batch', 'bad record')));
    assert.deepEqual(outcomes, [...Array(POISON_ATTEMPTS - 1).fill('retry'), 'set_aside']);
    const aside = h.schema.unprocessable('col_a');
    assert.equal(aside.length, 1);
    assert.equal(aside[0]!.seq, 1);
    assert.equal(aside[0]!.error, 'bad record');
    assert.equal(aside[0]!.attempts, POISON_ATTEMPTS);
    assert.match(new TextDecoder().decode(aside[0]!.body), /^\{"i":0,"k":0\}/);
    assert.deepEqual(h.errors, ['prj_a:server_error']);
    assert.equal(h.policy.gate('col_a'), undefined, 'later records flow at once');
    assert.equal(h.spool.pendingRecords(), 0, 'the entry left the spool');
    await h.append(1);
    assert.equal(h.lease().firstSeq, 2);
  });

  it('a lease of several entries that keeps failing is narrowed to its first half until a batch passes its range', async (t) => {
    const h = await harness(t);
    await h.append(4, 5);
    const outcomes: StepOutcome[] = [];
    for (let i = 0; i < POISON_ATTEMPTS; i++) outcomes.push(await h.fail(h.lease(), new Error('boom')));
    assert.deepEqual(outcomes, [...Array(POISON_ATTEMPTS - 1).fill('retry'), 'narrowed']);
    assert.equal(h.policy.limitOf('col_a'), 10, 'two of four entries of 5 records');
    assert.equal(h.waits.at(-1), RETRY_MIN_MS, 'the narrowed batch is retried promptly');
    assert.equal(h.schema.unprocessable('col_a').length, 0);
    const first = h.lease();
    assert.equal(first.records, 10);
    assert.equal(
      await h.policy.withStepRetry(
        first,
        () => h.spool.complete(first),
        async () => ({ laneLive: true }),
      ),
      'committed',
    );
    assert.equal(h.policy.limitOf('col_a'), 10, 'still narrowed: the failing range is not passed');
    const second = h.lease();
    assert.equal(
      await h.policy.withStepRetry(
        second,
        () => h.spool.complete(second),
        async () => ({ laneLive: true }),
      ),
      'committed',
    );
    assert.equal(h.policy.limitOf('col_a'), undefined, 'past the range: full leases again');
    assert.equal(h.policy.backingOff(), false);
  });

  it('abandon runs before the decision and decides liveness', async (t) => {
    const h = await harness(t);
    await h.append(1);
    const seen: unknown[] = [];
    const err = new Error('boom');
    const out = await h.policy.withStepRetry(
      h.lease(),
      () => Promise.reject(err),
      async (e) => {
        seen.push(e);
        return { laneLive: false };
      },
    );
    assert.equal(out, 'rerun');
    assert.deepEqual(seen, [err]);
  });
});
