import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CollectionLane, LaneAborted } from '../../src/pipeline/collection-lane.js';

/** 'pending', 'resolved' or 'rejected:<name>' once the microtasks and one macrotask have run. */
async function state(p: Promise<unknown>): Promise<string> {
  let out = 'pending';
  p.then(
    () => (out = 'resolved'),
    (err: Error) => (out = `rejected:${err.name}`),
  );
  await new Promise((r) => setImmediate(r));
  return out;
}

describe('collection lane', () => {
  it('plans take turns in lane order, even when later batches ask first', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b, c] = [lane.enter(), lane.enter(), lane.enter()];
    const order: string[] = [];
    const cTurn = lane.planTurn(c).then(() => order.push('c'));
    const bTurn = lane.planTurn(b).then(() => order.push('b'));
    assert.equal(await state(cTurn), 'pending');
    assert.equal(await state(bTurn), 'pending');
    await lane.planTurn(a);
    order.push('a');
    lane.markPlanned(a);
    assert.equal(await state(bTurn), 'resolved');
    assert.equal(await state(cTurn), 'pending', 'c waits for b to plan, not only for a');
    lane.markPlanned(b);
    await cTurn;
    assert.deepEqual(order, ['a', 'b', 'c']);
  });

  it('commits take turns in lane order: a batch commits only after the one before it has left', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b, c] = [lane.enter(), lane.enter(), lane.enter()];
    for (const s of [a, b, c]) lane.markPlanned(s);
    const cTurn = lane.commitTurn(c);
    const bTurn = lane.commitTurn(b);
    assert.equal(await state(cTurn), 'pending');
    assert.equal(await state(bTurn), 'pending');
    await lane.commitTurn(a);
    assert.equal(await state(bTurn), 'pending', 'planned is not enough: a has not committed yet');
    lane.leave(a, true);
    assert.equal(await state(bTurn), 'resolved');
    assert.equal(await state(cTurn), 'pending');
    lane.leave(b, true);
    assert.equal(await state(cTurn), 'resolved');
    lane.leave(c, true);
    assert.equal(lane.size, 0);
  });

  it('a batch that fails aborts every batch behind it, at its next turn', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b, c] = [lane.enter(), lane.enter(), lane.enter()];
    lane.markPlanned(a);
    const cPlan = lane.planTurn(c);
    // b fails before it plans (a worker error): the gates open, and c finds its turn refused.
    lane.leave(b, false);
    assert.equal(await state(cPlan), 'rejected:LaneAborted');
    assert.equal(lane.live(c), false);
    await assert.rejects(lane.commitTurn(c), LaneAborted);
  });

  it('a batch that fails does not abort the batches before it', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b] = [lane.enter(), lane.enter()];
    lane.markPlanned(a);
    lane.markPlanned(b);
    // b fails while a (planned, its plan applied ahead) is still building its files.
    lane.leave(b, false);
    assert.equal(lane.live(a), true, 'a is still live');
    assert.equal(await state(lane.commitTurn(a)), 'resolved', 'a commits as it would have');
    assert.equal(lane.draining(), false, 'no batch of an ended epoch is in flight');
  });

  it('drains: until every aborted batch is back, the lane says so', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b, c] = [lane.enter(), lane.enter(), lane.enter()];
    assert.equal(lane.draining(), false);
    lane.leave(a, false);
    assert.equal(lane.draining(), true);
    lane.leave(c, false);
    assert.equal(lane.draining(), true, 'b is still out');
    lane.leave(b, false);
    assert.equal(lane.draining(), false);
    assert.equal(lane.size, 0);
  });

  it('an aborted batch leaving does not end the epoch again: a batch entered after the failure stays live', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b] = [lane.enter(), lane.enter()];
    lane.leave(a, false);
    lane.leave(b, false);
    const d = lane.enter();
    assert.equal(lane.live(d), true);
    assert.equal(await state(lane.planTurn(d)), 'resolved', 'no batch in flight before it');
    assert.equal(await state(lane.commitTurn(d)), 'resolved');
    lane.leave(d, true);
  });

  it('a batch entering behind batches still in flight waits for them, even after the last one left', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b] = [lane.enter(), lane.enter()];
    lane.markPlanned(a);
    lane.markPlanned(b);
    // The newest batch fails (nothing behind it to abort); a is still in flight.
    lane.leave(b, false);
    const d = lane.enter();
    const dCommit = lane.commitTurn(d);
    assert.equal(await state(dCommit), 'pending', 'd must not commit before a');
    lane.leave(a, true);
    assert.equal(await state(dCommit), 'resolved');
    lane.leave(d, true);
  });

  it('a turn is never left hanging: leaving opens both gates', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b] = [lane.enter(), lane.enter()];
    const plan = lane.planTurn(b);
    const commit = lane.commitTurn(b);
    lane.leave(a, true);
    assert.equal(await state(plan), 'resolved', 'a left without planning (a destroyed collection): b plans');
    assert.equal(await state(commit), 'resolved');
  });

  it('a failed batch still in flight keeps the lane draining, waits for the batches before it, and stays live unless one of them fails', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b, c] = [lane.enter(), lane.enter(), lane.enter()];
    for (const s of [a, b, c]) lane.markPlanned(s);
    // b failed after its plan was applied ahead: c is aborted at once, b waits for a.
    lane.fail(b);
    assert.equal(lane.live(c), false);
    assert.equal(lane.live(b), true, 'no earlier batch failed');
    assert.equal(lane.draining(), true, 'b is on its way out: nothing new is leased');
    const bWait = lane.earlierDone(b);
    assert.equal(await state(bWait), 'pending', 'a has not committed');
    lane.markCommitted(a);
    assert.equal(await state(bWait), 'resolved', 'a committed (it has not left yet)');
    lane.leave(a, true);
    lane.leave(c, false);
    lane.leave(b, false);
    assert.equal(lane.draining(), false);
    assert.equal(lane.size, 0);
  });

  it('a failure before a failed batch ends its epoch too', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b] = [lane.enter(), lane.enter()];
    lane.fail(b);
    lane.fail(a);
    assert.equal(lane.live(b), false, "a's failure discards what b would have done");
    assert.equal(lane.live(a), true);
  });

  it('a commit opens the turn of the batch behind before the batch leaves', async () => {
    const lane = new CollectionLane('col_a');
    const [a, b] = [lane.enter(), lane.enter()];
    const bTurn = lane.commitTurn(b);
    lane.markCommitted(a);
    assert.equal(await state(bTurn), 'resolved');
    lane.leave(a, true);
    lane.leave(b, true);
  });
});
