/**
 * The commit seam's contract (src/pipeline/commit-seam.ts; docs/architecture.md, "The commit"), run
 * over every participant a real server commits batches through — schema, views, and the output
 * consumers' (metrics: rollups, then late data), whatever else is listed — with real LMDB, DuckDB
 * and HTTP. Each participant is wrapped (the wrapper only watches and delegates) and every batch's
 * first commit is aborted after all of them staged, so each batch is replayed once. Per participant:
 *
 * - staged in the spool's transaction: `stage` runs inside a Store transaction, while the batch's
 *   spool entries are still there;
 * - applied after it: `applyCommitted` runs only once that transaction has committed (its commit hook
 *   has fired) and the batch's spool entries are gone;
 * - idempotent on replay: what the aborted stages wrote left no trace in any LMDB database (one
 *   check for all of them: the state before the replay's stages equals the state before the aborted
 *   ones), and the replayed batches are counted exactly once (collection files, view records,
 *   rollups, late data).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Database, RootDatabase } from 'lmdb';
import type { CommitParticipant, CommittingBatch } from '../../src/pipeline/commit-seam.js';
import { OUTPUT_CONSUMERS } from '../../src/pipeline/output-consumers.js';
import { StaleBatchError } from '../../src/schema/schema-service.js';
import { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { countsAndSums, ingestProject, settle } from '../rollup/rollup-helpers.js';

const MIN = 60_000;

/** The runner's participants in commit order: schema, views, the metrics consumer's (rollups, late data), view generation. */
const PARTICIPANTS = ['schema', 'views', 'rollups', 'late-data', 'view-generation'];

/** What one participant was seen doing for one batch (by its first spool sequence). */
interface Seen {
  stages: Array<{ inside: boolean; entriesThere: boolean }>;
  applies: Array<{ committed: boolean; entriesGone: boolean }>;
}

/** Every database of the LMDB environment, as raw bytes (no decoding: any encoding compares). */
type Snapshot = Map<string, Array<[string, string]>>;

describe('commit participants: the seam contract', () => {
  let srv: TestServer;
  let names: string[] = [];
  /** participant → first sequence → what it did. */
  const seen = new Map<string, Map<number, Seen>>();
  /** first sequence → LMDB before each attempt's stages (the aborted one, then the replay). */
  const before_: Map<number, Snapshot[]> = new Map();
  let counted = 0;
  let lateFiles: Array<{ excluded_count: number }> = [];
  let viewRecords = 0;
  let collectionRows = 0;

  before(async () => {
    srv = await TestServer.start();
    const { fx, project, send } = await ingestProject(srv, 'commit contract', 'events');
    ok(await srv.post(project, { late_data_window_minutes: 60 }));
    await send([{ n: 0 }]);
    const s = srv.sluice.services;
    assert.ok(await s.pipeline!.idle(30_000));
    const [collection] = ok(await srv.get(`${project}/collections`));
    const view = ok(
      await srv.post(`${project}/views`, {
        name: 'Events',
        collection_id: collection.id,
        transform_mode: 'manual',
        transform_script: 'function transform(r) { return { n: r.n }; }',
        output_schema: [{ name: 'n', type: 'number' }],
      }),
      201,
    );
    for (let i = 0; i < 200 && ok(await srv.get(`${project}/views/${view.id}/records`)).length === 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    const metric = ok(
      await srv.post(`${project}/metrics`, { name: 'Events', view_id: view.id, value_field: 'n' }),
      201,
    );
    await settle(srv, `${project}/metrics`, [metric.id]);

    // Watch every participant of the running pipeline (the runner's own list, in its order).
    const store = s.store;
    const spoolBody = store.root.openDB<Uint8Array, number>({ name: 'spool_body', encoding: 'binary' });
    const list = (s.pipeline as unknown as { participants: CommitParticipant[] }).participants;
    names = list.map((p) => p.name);
    const committed = new Set<string>();
    const attempts = new Map<number, number>();
    const seenOf = (name: string, seq: number): Seen => {
      const byBatch = seen.get(name) ?? seen.set(name, new Map()).get(name)!;
      return byBatch.get(seq) ?? byBatch.set(seq, { stages: [], applies: [] }).get(seq)!;
    };
    const wrap = (p: CommitParticipant, first: boolean): CommitParticipant => ({
      name: p.name,
      stage(batch: CommittingBatch) {
        const seq = batch.lease.firstSeq;
        const attempt = attempts.get(seq) ?? 0;
        if (first) (before_.get(seq) ?? before_.set(seq, []).get(seq)!).push(snapshot(store.root));
        let inside = true;
        try {
          store.afterCommit(() => committed.add(`${p.name} ${seq} ${attempt}`));
        } catch {
          inside = false;
        }
        seenOf(p.name, seq).stages.push({
          inside,
          entriesThere: batch.lease.entries.every((e) => spoolBody.get(e.seq) !== undefined),
        });
        return p.stage(batch);
      },
      applyCommitted(batch: CommittingBatch, staged: unknown) {
        const seq = batch.lease.firstSeq;
        seenOf(p.name, seq).applies.push({
          committed: committed.has(`${p.name} ${seq} ${attempts.get(seq) ?? 0}`),
          entriesGone: batch.lease.entries.every((e) => spoolBody.get(e.seq) === undefined),
        });
        p.applyCommitted(batch, staged);
      },
      ...(p.abandon ? { abandon: (b) => p.abandon!(b) } : {}),
    });
    // Last: every participant has staged when the first attempt of a batch aborts (a stale batch
    // is released and run again at once: the replay).
    const abortOnce: CommitParticipant = {
      name: 'abort-once',
      stage(batch) {
        const seq = batch.lease.firstSeq;
        if (attempts.has(seq)) return null;
        attempts.set(seq, 1);
        throw new StaleBatchError(batch.collection.id);
      },
      applyCommitted: () => undefined,
    };
    list.splice(0, list.length, ...list.map((p, i) => wrap(p, i === 0)), abortOnce);

    const now = Date.now();
    const at = (ms: number) => new Date(ms).toISOString();
    await send(Array.from({ length: 10 }, (_, i) => ({ n: 1, timestamp: at(now - 1000 - i) })));
    await settle(srv, `${project}/metrics`, [metric.id]);
    // 5 within the window, 7 three hours back (late).
    await send([
      ...Array.from({ length: 5 }, () => ({ n: 10, timestamp: at(now - 30 * MIN) })),
      ...Array.from({ length: 7 }, (_, i) => ({ n: 100, timestamp: at(now - 3 * 3_600_000 - i * MIN) })),
    ]);
    await settle(srv, `${project}/metrics`, [metric.id]);
    list.splice(0, list.length, ...list.filter((p) => p !== abortOnce));

    const byDay =
      (await countsAndSums(srv, metric.id, s.metrics.byId(metric.id)!.definition_revision, 'day')).get('__total__') ??
      new Map();
    counted = [...byDay.values()].reduce((n, [c]) => n + c, 0);
    lateFiles = ok(await srv.get(`${project}/late_data`));
    viewRecords = ok(await srv.get(`/v1/projects/${fx.projectId}/views/${view.id}/records?limit=100`)).length;
    collectionRows = s.schema.manifests(collection.id).reduce((n, m) => n + m.rows, 0);
  });
  after(() => srv.stop());

  test("every participant of the runner is in this suite: schema, views, each output consumer's, and the rest", () => {
    // A new participant (a new output consumer's, say) fails here until it is added to PARTICIPANTS.
    assert.deepEqual(names, PARTICIPANTS);
    assert.ok(
      OUTPUT_CONSUMERS.some((c) => c.name === 'metrics'),
      'metrics: rollups and late-data',
    );
    assert.equal(before_.size, 2, 'two batches committed');
  });

  for (const name of PARTICIPANTS) {
    describe(name, () => {
      test("stages inside the spool's transaction, before its entries are deleted; twice per batch (aborted, then replayed)", () => {
        const batches = seen.get(name);
        assert.ok(batches && batches.size === 2, `${name} staged both batches`);
        for (const [seq, b] of batches) {
          assert.equal(b.stages.length, 2, `batch ${seq}: the aborted stage and the replay's`);
          for (const st of b.stages) assert.deepEqual(st, { inside: true, entriesThere: true }, `batch ${seq}`);
        }
      });

      test('applies once per batch, after the transaction committed and the entries are gone', () => {
        assert.equal(seen.get(name)?.size, 2);
        for (const [seq, b] of seen.get(name) ?? [])
          assert.deepEqual(b.applies, [{ committed: true, entriesGone: true }], `batch ${seq}`);
      });
    });
  }

  // Taken before the first participant stages, so it covers every one of them at once.
  test('the aborted stages of every participant leave no trace in LMDB: the replay starts from the same state', () => {
    for (const [seq, snaps] of before_) {
      assert.equal(snaps.length, 2, `batch ${seq}`);
      assert.deepEqual(diff(snaps[0]!, snaps[1]!), [], `batch ${seq}`);
    }
  });

  test('replayed batches count exactly once: collection files, view records, rollups, late data', () => {
    assert.equal(viewRecords, 1 + 10 + 12, 'the view holds every record once');
    assert.equal(counted, 1 + 10 + 5, 'the metric counts every on-time record once, the late ones not');
    assert.deepEqual(
      lateFiles.map((f) => f.excluded_count),
      [7],
      'one late data file',
    );
    assert.equal(collectionRows, 1 + 10 + 12, 'the collection files hold every record once');
  });
});

/** Written on a timer, by no participant: the pipeline's per-minute counters (src/telemetry). */
const BACKGROUND = new Set(['pipeline_telemetry']);

/** Raw bytes of every named database (the environment's main database lists their names) but BACKGROUND ones. */
function snapshot(root: RootDatabase): Snapshot {
  const out: Snapshot = new Map();
  for (const name of root.getKeys()) {
    if (typeof name !== 'string' || BACKGROUND.has(name)) continue;
    const db = root.openDB({ name, encoding: 'binary', keyEncoding: 'binary' }) as Database<Buffer, Buffer>;
    out.set(
      name,
      [...db.getRange({})].map(({ key, value }) => [
        Buffer.from(key).toString('hex'),
        Buffer.from(value).toString('hex'),
      ]),
    );
  }
  return out;
}

/** Databases whose content differs between two snapshots, with a count of what changed. */
function diff(a: Snapshot, b: Snapshot): string[] {
  const out: string[] = [];
  for (const name of new Set([...a.keys(), ...b.keys()])) {
    const x = new Map(a.get(name) ?? []);
    const y = new Map(b.get(name) ?? []);
    const changed = [...new Set([...x.keys(), ...y.keys()])].filter((k) => x.get(k) !== y.get(k));
    if (changed.length > 0) out.push(`${name}: ${changed.length} key(s) differ`);
  }
  return out;
}
