import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { DEFAULT_SCHEMA_SETTINGS } from '../../src/catalog/collections.js';
import type { CollectionRecord } from '../../src/catalog/records.js';
import { systemClock } from '../../src/clock.js';
import { Spool } from '../../src/spool/spool.js';
import { PipelineRunner, POISON_ATTEMPTS, type RunnerDeps } from '../../src/pipeline/runner.js';
import { SchemaService } from '../../src/schema/schema-service.js';
import { Store } from '../../src/store/db.js';
import { deferred, ScriptedPool, type Script } from './scripted-pool.js';

/**
 * The runner with several batches of one collection in flight (docs/architecture.md, "Ordering"),
 * on a scripted pool: each batch plans for real against the collection's book, and the script
 * decides when it plans, when it returns, and whether it fails.
 */

const collection: CollectionRecord = {
  ...DEFAULT_SCHEMA_SETTINGS,
  schema_opaque_paths: [],
  schema_tracked_paths: [],
  // No bulk settling: states do not depend on where batches split.
  schema_bulk_rows: 0,
  id: 'col_lane',
  team_id: 'team_lane',
  project_id: 'prj_lane',
  source_id: 'src_lane',
  slug: 'lane',
  name: 'lane',
  created_at: new Date().toISOString(),
  updated_at: new Date().toISOString(),
  deleted_at: null,
};

describe('runner: batches of one collection in flight together', () => {
  let dir: string;
  let store: Store;
  let spool: Spool;
  let schema: SchemaService;
  let runner: PipelineRunner | null;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-runner-'));
    store = new Store(dir);
    spool = new Spool(store);
    schema = new SchemaService(store, systemClock, pino({ level: 'silent' }), dir);
    runner = null;
  });
  afterEach(async () => {
    await runner?.stop();
    schema.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `n` entries of `records` records each ({"a": …}), one per spool entry. */
  async function spoolEntries(
    n: number,
    records = 10,
    body: (entry: number, k: number) => object = (i, k) => ({ a: i * 1000 + k }),
  ): Promise<number[]> {
    const seqs: number[] = [];
    for (let i = 0; i < n; i++) {
      const text = Array.from({ length: records }, (_, k) => JSON.stringify(body(i, k))).join('\n');
      seqs.push(
        await spool.append({
          collection_id: collection.id,
          project_id: collection.project_id,
          received_at: Date.now(),
          records,
          format: 'ndjson',
          body: new TextEncoder().encode(text),
        }),
      );
    }
    return seqs;
  }

  function start(pool: ScriptedPool, leaseMaxRecords = 10, deps: Partial<RunnerDeps> = {}): PipelineRunner {
    runner = new PipelineRunner({
      spool,
      collections: { byId: (id) => (id === collection.id ? collection : undefined) },
      schema,
      pool,
      clock: systemClock,
      log: pino({ level: 'silent' }),
      leaseMaxRecords,
      ...deps,
    });
    runner.start();
    return runner;
  }

  /** Spool order of completed leases (first sequence numbers). */
  function recordCommits(): number[] {
    const order: number[] = [];
    const complete = spool.complete.bind(spool);
    spool.complete = async (lease, stage) => {
      await complete(lease, stage);
      order.push(lease.firstSeq);
    };
    return order;
  }

  /** Live versions as committed in LMDB. */
  const committedVersions = () => schema.db.versions.list(collection.id).filter((v) => v.merged_into === null);

  it('batches run on every worker at once and commit in spool order, even when later ones finish first', async () => {
    const seqs = await spoolEntries(6);
    const commits = recordCommits();
    const gates = new Map(seqs.map((s) => [s, deferred()]));
    const pool = new ScriptedPool(3, (run) => ({ beforeReturn: () => gates.get(run.firstSeq)!.promise }));
    const r = start(pool);
    await pool.started(3);
    assert.equal(spool.leasesOf(collection.id), 3, 'three batches of the one collection leased');
    // Finish in reverse order: the newest first.
    for (const s of [...seqs].reverse()) gates.get(s)!.resolve();
    assert.ok(await r.idle(10_000));
    assert.equal(pool.maxRunning, 3);
    assert.deepEqual(commits, seqs, 'committed in spool order');
    const [v] = committedVersions();
    assert.equal(v!.row_count, 60);
  });

  it('a batch is leased ahead only once enough waits for a batch of its own', async () => {
    // Each request is a fifth of a lease (2 of 10 records): while the first batch runs, one more
    // request is not worth a batch of its own (it would write as many files as a full one); two are
    // (a quarter of a lease, runner.ts floorRecords).
    const [s1] = await spoolEntries(1, 2);
    const gate = deferred();
    const pool = new ScriptedPool(2, (run) => ({
      beforeReturn: () => (run.firstSeq === s1 ? gate.promise : undefined),
    }));
    const r = start(pool);
    await pool.started(1);
    const [s2] = await spoolEntries(1, 2);
    await new Promise((res) => setTimeout(res, 50));
    assert.equal(pool.runs.length, 1, 'a fifth of a lease waiting: not leased ahead');
    const [, s4] = await spoolEntries(2, 2);
    const runs = await pool.started(2);
    assert.deepEqual(
      [runs[1]!.firstSeq, runs[1]!.lastSeq],
      [s2, s2! + 1],
      'a quarter of a lease waiting: leased ahead, whole',
    );
    gate.resolve();
    assert.ok(await r.idle(10_000));
    assert.deepEqual(
      pool.runs.map((x) => [x.firstSeq, x.lastSeq]),
      [
        [s1, s1],
        [s2, s2! + 1],
        [s4, s4],
      ],
    );
  });

  it('a plan applied ahead is not undone when the batch before it commits', async () => {
    // a and b plan; a commits; only then c plans (against the book holding a and b), then b and
    // c commit. Applying a's plan again at its commit would put a's counts back over b's.
    const [sa, sb, sc] = await spoolEntries(3);
    const aReturn = deferred();
    const bReturn = deferred();
    const cPlan = deferred();
    const pool = new ScriptedPool(3, (run) =>
      run.firstSeq === sa
        ? { beforeReturn: () => aReturn.promise }
        : run.firstSeq === sb
          ? { beforeReturn: () => bReturn.promise }
          : run.firstSeq === sc
            ? { beforePlan: () => cPlan.promise }
            : {},
    );
    const r = start(pool);
    const [a, b] = await pool.started(3);
    await Promise.all([a!.planned, b!.planned]);
    aReturn.resolve();
    while (r.batches() < 1) await new Promise((res) => setTimeout(res, 5));
    cPlan.resolve();
    await pool.runs[2]!.planned;
    bReturn.resolve();
    assert.ok(await r.idle(10_000));
    assert.equal(committedVersions()[0]!.row_count, 30, 'every row counted once');
    assert.equal(pool.runs.length, 3, 'nothing ran twice');
  });

  it('a batch that fails before it plans leaves the planned batch before it to commit, and the book as committed', async () => {
    const [sa, sb] = await spoolEntries(2);
    const aReturn = deferred();
    let aPlanned: Promise<void> | null = null;
    const pool = new ScriptedPool(2, (run): Script => {
      if (run.firstSeq === sa && run.attempt === 1) {
        aPlanned = run.planned;
        return { beforeReturn: () => aReturn.promise };
      }
      // b fails once, after a has planned (its plan applied to the book ahead of its commit).
      if (run.firstSeq === sb && run.attempt === 1) return { beforePlan: () => aPlanned!, fail: 'before-plan' };
      return {};
    });
    const commits = recordCommits();
    const r = start(pool);
    await pool.started(2);
    // Let b's failure land while a is still out, then let a finish.
    while (pool.running > 1) await new Promise((res) => setTimeout(res, 5));
    aReturn.resolve();
    assert.ok(await r.idle(10_000));
    assert.equal(committedVersions()[0]!.row_count, 20, 'every row counted once');
    assert.deepEqual(commits, [sa, sb]);
    assert.deepEqual(
      pool.runs.map((x) => [x.firstSeq, x.attempt]),
      [
        [sa, 1],
        [sb, 1],
        [sb, 2],
      ],
      'a ran once; b ran again',
    );
    const book = await schema.book(collection);
    assert.equal(book.current(committedVersions()[0]!.id)!.row_count, 20, 'the book holds what is committed');
  });

  it('a batch that fails after it planned makes the batches behind it run again, and nothing is counted twice', async () => {
    const seqs = await spoolEntries(4);
    const pool = new ScriptedPool(4, (run) =>
      run.firstSeq === seqs[1] && run.attempt === 1 ? { fail: 'after-plan' } : {},
    );
    const r = start(pool);
    assert.ok(await r.idle(15_000));
    assert.equal(committedVersions()[0]!.row_count, 40, 'every row counted once');
    const runsOf = (s: number) => pool.runs.filter((x) => x.firstSeq === s).length;
    assert.equal(runsOf(seqs[1]!), 2, 'the failed batch ran again');
    for (const s of seqs.slice(2)) assert.ok(runsOf(s) >= 2, `batch ${s}, behind it, ran again`);
  });

  it('counts what it did: leases, commits, and the batches run again behind a failed one', async () => {
    const seqs = await spoolEntries(4);
    const pool = new ScriptedPool(4, (run) =>
      run.firstSeq === seqs[1] && run.attempt === 1 ? { fail: 'after-plan' } : {},
    );
    const r = start(pool);
    assert.ok(await r.idle(15_000));
    const c = r.counters();
    assert.equal(c.committed, 4);
    assert.equal(c.committedRecords, 40);
    assert.equal(c.failed, 1, 'the failing batch');
    const behind = pool.runs.filter((x) => x.firstSeq > seqs[1]! && x.attempt === 1).length;
    assert.ok(
      c.reruns >= behind && behind > 0,
      `the batches behind it counted as re-runs (${c.reruns} of ${behind} at least)`,
    );
    assert.equal(c.leases, pool.runs.length, 'one lease per run');
    assert.equal(c.leases, c.committed + c.failed + c.reruns, 'every lease committed, failed or re-ran');
    assert.ok(c.planMs >= 0 && c.commitStageMs > 0);
  });

  it('an entry that always fails is narrowed down to and set aside while the batches around it commit', async () => {
    const seqs = await spoolEntries(6, 10, (i, k) => (i === 2 ? { poison: true, k } : { a: i * 1000 + k }));
    const pool = new ScriptedPool(3, (run) =>
      run.firstSeq <= seqs[2]! && run.lastSeq >= seqs[2]! ? { fail: 'after-plan' } : {},
    );
    const r = start(pool, 20);
    assert.ok(await r.idle(30_000), 'the spool drains');
    const aside = schema.unprocessable(collection.id);
    assert.deepEqual(
      aside.map((e) => [e.seq, e.attempts]),
      [[seqs[2], POISON_ATTEMPTS]],
    );
    const byShape = new Map(committedVersions().map((v) => [v.signature, v.row_count]));
    assert.equal(byShape.get('a:number'), 50, 'the other five entries are committed once');
    assert.equal(byShape.get('k:number,poison:boolean') ?? 0, 0, 'nothing of the set-aside entry is counted');
  });

  it('batches that write unclassified files commit as planned: none is re-planned, and the rows are counted once', async () => {
    // No room for candidates: every shape stays unclassified and gets an `_unclassified/<hash>`
    // file. Its rows are counted on the shape when the plan is made, so the commit changes
    // nothing and the plans of the batches behind it stay good.
    const noPool: CollectionRecord = { ...collection, schema_candidate_pool: 0 };
    const seqs = await spoolEntries(4);
    const gates = new Map(seqs.map((s) => [s, deferred()]));
    const pool = new ScriptedPool(4, (run) => ({ beforeReturn: () => gates.get(run.firstSeq)!.promise }));
    const r = start(pool, 10, { collections: { byId: (id) => (id === noPool.id ? noPool : undefined) } });
    const runs = await pool.started(4);
    await Promise.all(runs.map((x) => x.planned));
    for (const s of seqs) gates.get(s)!.resolve();
    assert.ok(await r.idle(10_000));
    assert.equal(pool.runs.length, 4, 'each batch ran once');
    const [shape, ...others] = schema.db.shapes.list(collection.id);
    assert.equal(others.length, 0);
    assert.equal(shape!.version_id, null);
    assert.equal(shape!.unclassified_rows, 40, 'every row of the unclassified files counted once');
    assert.equal(
      (await schema.book(noPool)).shapes.get(shape!.id)!.unclassified_rows,
      40,
      'the book holds what is committed',
    );
  });

  it('a batch that fails after it planned lets the batches before it commit without running again', async () => {
    // a is still on its worker when b (planned after a, its plan applied ahead) fails: the book is
    // reloaded only after a has committed, so a's plan, made against the same book, stays good.
    const [sa, sb, sc] = await spoolEntries(3);
    const aReturn = deferred();
    const pool = new ScriptedPool(3, (run): Script => {
      if (run.firstSeq === sa && run.attempt === 1) return { beforeReturn: () => aReturn.promise };
      if (run.firstSeq === sb && run.attempt === 1) return { fail: 'after-plan' };
      return {};
    });
    const commits = recordCommits();
    const r = start(pool);
    await pool.started(3);
    // b's failure lands (and c, behind it, is aborted) while a is out.
    while (pool.runs.filter((x) => x.firstSeq === sb).length < 1 || pool.running > 1)
      await new Promise((res) => setTimeout(res, 5));
    aReturn.resolve();
    assert.ok(await r.idle(15_000));
    assert.equal(pool.runs.filter((x) => x.firstSeq === sa).length, 1, 'a ran once');
    assert.deepEqual(commits.slice(0, 1), [sa]);
    assert.deepEqual(
      [...commits].sort((x, y) => x - y),
      [sa, sb, sc],
    );
    assert.equal(committedVersions()[0]!.row_count, 30, 'every row counted once');
  });

  it('the schema detector runs after its batch has left the lane: it does not hold the commits behind it', async () => {
    // a brings a new shape, so the detector (schema_detector auto) looks at the collection after
    // a's commit; here it is held inside the report while b, planned and done, commits.
    const [sa, sb] = await spoolEntries(2);
    const report = deferred();
    const reportOf = schema.report.bind(schema);
    let detecting = false;
    schema.report = async (...args) => {
      detecting = true;
      await report.promise;
      return reportOf(...args);
    };
    const commits = recordCommits();
    const pool = new ScriptedPool(2);
    const r = start(pool, 10, {
      collections: { byId: (id) => (id === collection.id ? collection : undefined), update: async () => undefined },
    });
    while (commits.length < 2) await new Promise((res) => setTimeout(res, 5));
    assert.ok(detecting, 'the detector is running');
    assert.deepEqual(commits, [sa, sb], 'b committed while the detector was held');
    report.resolve();
    assert.ok(await r.idle(10_000));
  });
});
