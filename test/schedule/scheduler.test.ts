import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/db.js';
import { JobScheduler } from '../../src/schedule/scheduler.js';
import type { SlotRun } from '../../src/schedule/types.js';

const MIN = 60_000;
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const log = createLogger('silent');

function scheduler(t: TestContext, clock: ManualClock, store?: Store): JobScheduler {
  const s = new JobScheduler({ clock, log, timer: false, ...(store ? { store } : {}) });
  s.start();
  t.after(() => s.stop());
  return s;
}

function dataDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sched-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('cron job runs once per slot, at the slot, never before', async (t) => {
  const clock = new ManualClock(T0 + 10_000);
  const s = scheduler(t, clock);
  const runs: SlotRun[] = [];
  const job = s.register({ name: 'c', schedule: { cron: '*/5 * * * *' }, run: (slot) => void runs.push(slot) });
  assert.equal(job.nextAt(), T0 + 5 * MIN);
  await s.runDue();
  assert.equal(runs.length, 0);
  clock.set(T0 + 5 * MIN);
  await s.runDue();
  await s.runDue();
  assert.deepEqual(
    runs.map((r) => [r.at, r.missed]),
    [[T0 + 5 * MIN, 0]],
  );
  assert.equal(job.lastAt(), T0 + 5 * MIN);
  assert.equal(job.nextAt(), T0 + 10 * MIN);
  // The clock jumps 15 minutes: the latest slot runs, the two before it are counted.
  clock.set(T0 + 20 * MIN + 10_000);
  await s.runDue();
  assert.deepEqual(
    runs.map((r) => [r.at, r.missed]),
    [
      [T0 + 5 * MIN, 0],
      [T0 + 20 * MIN, 2],
    ],
  );
  // Found due too late (a stalled loop): counted, not run late.
  clock.set(T0 + 26 * MIN);
  await s.runDue();
  assert.equal(runs.length, 2);
  clock.set(T0 + 30 * MIN);
  await s.runDue();
  assert.deepEqual(runs.at(-1)!.missed, 1);
});

test('everyMs and kick jobs', async (t) => {
  const clock = new ManualClock(T0);
  const s = scheduler(t, clock);
  const every: number[] = [];
  const kicked: number[] = [];
  s.register({ name: 'every', schedule: { everyMs: 1000 }, run: (slot) => void every.push(slot.at) });
  const k = s.register({ name: 'kick', schedule: { kick: true }, run: (slot) => void kicked.push(slot.at) });
  assert.equal(k.nextAt(), null);
  clock.advance(999);
  await s.runDue();
  assert.deepEqual(every, []);
  clock.advance(1);
  await s.runDue();
  clock.advance(1000);
  await s.runDue();
  assert.deepEqual(every, [T0 + 1000, T0 + 2000]);
  assert.deepEqual(kicked, []);
  k.kick();
  k.kick();
  await s.runDue();
  assert.deepEqual(kicked, [T0 + 2000]);
  assert.equal(s.get('kick')?.lastAt(), T0 + 2000);
});

test('a job never overlaps itself: a kick during a run runs once after it; a slot due during it is counted', async (t) => {
  const clock = new ManualClock(T0);
  const s = scheduler(t, clock);
  let active = 0;
  let maxActive = 0;
  let release!: () => void;
  let gate = new Promise<void>((r) => (release = r));
  const runs: SlotRun[] = [];
  const job = s.register({
    name: 'slow',
    schedule: { cron: '* * * * *' },
    run: async (slot) => {
      runs.push(slot);
      active++;
      maxActive = Math.max(maxActive, active);
      await gate;
      active--;
    },
  });
  clock.set(T0 + MIN);
  const first = s.runDue();
  await new Promise((r) => setImmediate(r));
  assert.equal(active, 1);
  job.kick();
  job.kick();
  clock.set(T0 + 2 * MIN);
  const second = s.runDue();
  assert.equal(runs.length, 1);
  release();
  gate = Promise.resolve();
  await Promise.all([first, second]);
  assert.equal(maxActive, 1);
  // The kick ran once after the first run, carrying the slot counted while it ran.
  assert.deepEqual(
    runs.map((r) => [r.at, r.missed]),
    [
      [T0 + MIN, 0],
      [T0 + 2 * MIN, 1],
    ],
  );
});

test('durable slot survives a restart: no double run, passed slots counted, never run late', async (t) => {
  const dir = dataDir(t);
  const clock = new ManualClock(T0);
  const runs: SlotRun[] = [];
  const def = {
    name: 'pull:p1',
    durable: true,
    schedule: { cron: '* * * * *' },
    run: (slot: SlotRun) => void runs.push(slot),
  };

  let store = new Store(dir);
  let s = new JobScheduler({ clock, log, store, timer: false });
  s.start();
  s.register(def);
  clock.set(T0 + MIN);
  await s.runDue();
  assert.deepEqual(
    runs.map((r) => r.at),
    [T0 + MIN],
  );
  await s.stop();
  await store.close();

  // Restart within the same minute: the slot already run is not run again.
  store = new Store(dir);
  s = new JobScheduler({ clock, log, store, timer: false });
  s.start();
  const h = s.register(def);
  assert.equal(h.lastAt(), T0 + MIN);
  assert.equal(h.nextAt(), T0 + 2 * MIN);
  clock.set(T0 + MIN + 30_000);
  await s.runDue();
  assert.equal(runs.length, 1);
  await s.stop();
  await store.close();

  // Down for five minutes and a half: the 2..6 minute slots passed (5), counted into the next run.
  clock.set(T0 + 6 * MIN + 30_000);
  store = new Store(dir);
  t.after(() => store.close());
  s = new JobScheduler({ clock, log, store, timer: false });
  s.start();
  t.after(() => s.stop());
  const h2 = s.register(def);
  await s.runDue();
  assert.equal(runs.length, 1, 'passed slots are not run late');
  assert.equal(h2.nextAt(), T0 + 7 * MIN);
  clock.set(T0 + 7 * MIN);
  await s.runDue();
  assert.deepEqual(
    runs.map((r) => [r.at, r.missed]),
    [
      [T0 + MIN, 0],
      [T0 + 7 * MIN, 5],
    ],
  );
});

test('durable: the slot is stored before the run, so a crash mid-run does not run it again', async (t) => {
  const dir = dataDir(t);
  const clock = new ManualClock(T0);
  let store = new Store(dir);
  let s = new JobScheduler({ clock, log, store, timer: false });
  s.start();
  let seen: number | undefined;
  s.register({
    name: 'crashy',
    durable: true,
    schedule: { cron: '* * * * *' },
    run: () => {
      seen = store.db<{ last_at: number }, string>('schedule_slots').get('crashy')?.last_at;
    },
  });
  clock.set(T0 + MIN);
  await s.runDue();
  assert.equal(seen, T0 + MIN, 'last_at was durable when the run started');
  await s.stop();
  await store.close();
  store = new Store(dir);
  t.after(() => store.close());
  s = new JobScheduler({ clock, log, store, timer: false });
  const runs: number[] = [];
  s.start();
  t.after(() => s.stop());
  s.register({
    name: 'crashy',
    durable: true,
    schedule: { cron: '* * * * *' },
    run: (slot) => void runs.push(slot.at),
  });
  await s.runDue();
  assert.deepEqual(runs, []);
});

test('run_latest runs the latest missed slot once at start and counts the others', async (t) => {
  const dir = dataDir(t);
  const clock = new ManualClock(T0);
  const runs: SlotRun[] = [];
  const def = {
    name: 'monitor:m1',
    durable: true,
    missed: 'run_latest' as const,
    schedule: { cron: '*/10 * * * *' },
    run: (slot: SlotRun) => void runs.push(slot),
  };
  let store = new Store(dir);
  let s = new JobScheduler({ clock, log, store, timer: false });
  s.start();
  s.register(def);
  await s.stop();
  await store.close();
  clock.set(T0 + 35 * MIN);
  store = new Store(dir);
  t.after(() => store.close());
  s = new JobScheduler({ clock, log, store, timer: false });
  s.start();
  t.after(() => s.stop());
  const h = s.register(def);
  await s.runDue();
  assert.deepEqual(
    runs.map((r) => [r.at, r.missed]),
    [[T0 + 30 * MIN, 2]],
  );
  assert.equal(h.nextAt(), T0 + 40 * MIN);
  await s.runDue();
  assert.equal(runs.length, 1);
});

test('reschedule computes the next slot from now and restarts the missed count; unregister removes the stored slot', async (t) => {
  const dir = dataDir(t);
  const clock = new ManualClock(T0);
  const store = new Store(dir);
  t.after(() => store.close());
  const s = new JobScheduler({ clock, log, store, timer: false });
  s.start();
  t.after(() => s.stop());
  const runs: SlotRun[] = [];
  const h = s.register({
    name: 'check:c1',
    durable: true,
    schedule: { cron: '* * * * *' },
    run: (slot) => void runs.push(slot),
  });
  clock.set(T0 + 3 * MIN + 20_000);
  await s.runDue(); // runs the 3rd minute; the 1st and 2nd are counted
  assert.deepEqual(
    runs.map((r) => r.missed),
    [2],
  );
  clock.set(T0 + 5 * MIN + 45_000);
  await s.runDue(); // the 4th counted, the 5th too late (45 s)
  assert.equal(runs.length, 1);
  h.reschedule({ cron: '0 * * * *' });
  assert.equal(h.nextAt(), T0 + 60 * MIN);
  assert.throws(() => h.reschedule({ cron: '* * * * * *' }), /exactly five fields/);
  clock.set(T0 + 60 * MIN);
  await s.runDue();
  assert.deepEqual(
    runs.map((r) => [r.at, r.missed]),
    [
      [T0 + 3 * MIN, 2],
      [T0 + 60 * MIN, 0],
    ],
  );
  assert.ok(store.db('schedule_slots').get('check:c1'));
  await h.unregister();
  assert.equal(store.db('schedule_slots').get('check:c1'), undefined);
  assert.equal(s.get('check:c1'), undefined);
});

test('stop aborts signals, waits for the run in flight, then stops jobs in reverse registration order', async () => {
  const clock = new ManualClock(T0);
  const s = new JobScheduler({ clock, log, timer: false });
  s.start();
  const order: string[] = [];
  let signal: AbortSignal | undefined;
  for (const name of ['a', 'b', 'c']) {
    s.register({
      name,
      schedule: name === 'b' ? { kick: true } : { everyMs: 1000 },
      run: async (slot) => {
        if (name !== 'b') return;
        signal = slot.signal;
        await new Promise((r) => slot.signal.addEventListener('abort', r));
        await new Promise((r) => setTimeout(r, 20));
        order.push('b finished');
      },
      stop: () => {
        order.push(`stop ${name}`);
        if (name === 'c') throw new Error('a failing stop does not stop the others');
      },
    });
  }
  s.get('b')!.kick();
  const running = s.runDue();
  await new Promise((r) => setImmediate(r));
  await s.stop();
  await running;
  assert.equal(signal?.aborted, true);
  assert.deepEqual(order, ['b finished', 'stop c', 'stop b', 'stop a']);
  assert.throws(() => s.register({ name: 'late', schedule: { kick: true }, run: () => {} }), /stopped/);
});

test('registration errors and 1,000 cron jobs on one timer', async (t) => {
  const clock = new ManualClock(T0);
  const s = scheduler(t, clock);
  assert.throws(() => s.register({ name: 'bad', schedule: { cron: '@reboot' }, run: () => {} }), /@reboot/);
  assert.throws(() => s.register({ name: 'bad', schedule: { everyMs: 0 }, run: () => {} }), /positive/);
  assert.throws(() => s.register({ name: 'bad', durable: true, schedule: { kick: true }, run: () => {} }), /no store/);
  let n = 0;
  const started = performance.now();
  for (let i = 0; i < 1000; i++)
    s.register({ name: `j${i}`, schedule: { cron: `${i % 60} * * * *` }, run: () => void n++ });
  assert.throws(() => s.register({ name: 'j1', schedule: { kick: true }, run: () => {} }), /already registered/);
  clock.set(T0 + 59 * MIN);
  for (let m = 1; m <= 59; m++) {
    clock.set(T0 + m * MIN);
    await s.runDue();
  }
  clock.set(T0 + 60 * MIN);
  await s.runDue();
  assert.equal(n, 1000);
  assert.ok(performance.now() - started < 10_000);
});

test('the timer runs due jobs on its own (real clock)', async (t) => {
  const { systemClock } = await import('../../src/clock.js');
  const s = new JobScheduler({ clock: systemClock, log, maxSleepMs: 50 });
  s.start();
  t.after(() => s.stop());
  let runs = 0;
  const h = s.register({ name: 'tick', schedule: { everyMs: 30 }, run: () => void runs++ });
  const deadline = Date.now() + 5000;
  while (runs < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.ok(runs >= 2);
  const k = s.register({ name: 'k', schedule: { kick: true }, run: () => void runs++ });
  const before = runs;
  k.kick();
  while (runs === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.ok(runs > before);
  await h.unregister();
});
