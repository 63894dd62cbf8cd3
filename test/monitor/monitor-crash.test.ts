/**
 * SIGKILL in the middle of evaluations: a child process applies slots of a sustained each_series
 * monitor (with a notification channel) through the real MonitorCatalog on real LMDB as fast as it
 * can and is killed at an arbitrary point. The stored state must equal a replay of every committed
 * slot from scratch — sustained clocks, firing states, alerts, open alert ids, outbox events — with no
 * slot applied twice, and evaluation must continue from it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManualClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/db.js';
import { MonitorCatalog } from '../../src/monitor/monitor-catalog.js';
import { applySlot, verdicts } from '../../src/monitor/evaluate.js';
import type { SeriesStateRecord } from '../../src/monitor/monitor-records.js';
import { Notifier } from '../../src/notify/notifier.js';
import { crashSlotValues, CRASH_MIN, CRASH_T0 } from './crash-pattern.js';

const CHILD = fileURLToPath(new URL('./crash-child.js', import.meta.url));
const PROJECT = { id: 'prj_cccccccccccccccccccc', team_id: 'team_cccccccccccccccccccc' } as never;
const METRIC = {
  id: 'met_cccccccccccccccccccc',
  name: 'Crash',
  project_id: 'prj_cccccccccccccccccccc',
  group_by: ['path'],
  value_field: 'v',
  unique_field: null,
  created_at: new Date(CRASH_T0).toISOString(),
} as never;

function open(dataDir: string) {
  const clock = new ManualClock(CRASH_T0);
  const log = createLogger('silent');
  const store = new Store(dataDir);
  const monitors = new MonitorCatalog(store, clock, log);
  const notifier = new Notifier({
    store,
    clock,
    log,
    outbound: () => {
      throw new Error('no sends');
    },
    publicUrl: () => 'http://sluice.test',
  });
  monitors.events = notifier;
  return { clock, store, monitors, notifier };
}

test('monitor state after SIGKILL mid-evaluation equals a replay of the committed slots; evaluation resumes without a double', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-monitor-crash-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  let s = open(dataDir);
  const channel = {
    id: 'nch_cccccccccccccccccccc',
    team_id: 'team_c',
    project_id: 'prj_cccccccccccccccccccc',
    name: 'Hook',
    type: 'webhook' as const,
    url: 'https://hook.test/',
    secret: 'whsec_AAAA',
    status: 'active' as const,
    disabled_reason: null,
    created_at: '',
    updated_at: '',
  };
  await s.store.transaction(() => s.notifier.db.stageChannel(channel));
  const monitor = await s.monitors.create(PROJECT, METRIC, {
    name: 'Crash',
    chart_value: 'max',
    scope: 'each_series',
    condition_type: 'sustained',
    threshold_value: 10,
    sustained_minutes: 2,
    time_window_minutes: 1,
    notification_channel_ids: [channel.id],
  });
  await s.store.close();

  const child = spawn(process.execPath, [CHILD, dataDir, 'prj_cccccccccccccccccccc', monitor.id], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let printed = 0;
  let lastPrinted = 0;
  child.stdout.on('data', (b: Buffer) => {
    for (const line of b.toString().split('\n').filter(Boolean)) {
      printed++;
      lastPrinted = Number(line);
    }
  });
  const exited = new Promise((r) => child.once('exit', r));
  const deadline = Date.now() + 20_000;
  // An arbitrary point: some hundreds of slots in, at a random moment.
  const target = 150 + Math.floor(Math.random() * 150);
  while (printed < target && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  child.kill('SIGKILL');
  await exited;
  assert.ok(printed >= target, `the child applied ${printed} slots`);

  s = open(dataDir);
  t.after(() => s.store.close());
  const m = s.monitors.get('prj_cccccccccccccccccccc', monitor.id)!;
  assert.ok(m.last_slot_at! >= lastPrinted, 'every slot reported as committed is stored');

  // Replay every stored slot from scratch.
  let states = new Map<string, SeriesStateRecord>();
  let opened = 0;
  let closed = 0;
  for (let at = CRASH_T0 + CRASH_MIN; at <= m.last_slot_at!; at += CRASH_MIN) {
    const out = applySlot(m, at, verdicts(m, crashSlotValues(at)), states);
    for (const o of out.opened) {
      opened++;
      out.states.find((x) => x.id === o.key)!.open_alert_id = `open_${o.key}`;
    }
    closed += out.closed.length;
    states = new Map(out.states.map((x) => [x.id, x]));
  }
  const stored = new Map(s.monitors.statesOf(monitor.id).map((x) => [x.id, x]));
  assert.deepEqual([...stored.keys()].sort(), [...states.keys()].sort());
  for (const [key, want] of states) {
    const got = stored.get(key)!;
    for (const f of ['is_firing', 'started_firing_at', 'pending_since', 'last_triggered_at', 'last_value'] as const)
      assert.deepEqual(got[f], want[f], `${key}.${f}`);
    assert.equal(
      got.open_alert_id === null,
      want.open_alert_id === null,
      `${key} has an open alert exactly when the replay does`,
    );
  }
  const alerts = s.monitors.store.alertsOfMetric('met_cccccccccccccccccccc');
  assert.equal(alerts.length, opened, 'one alert per period, none lost, none doubled');
  assert.equal(alerts.filter((a) => a.ended_at !== null).length, closed);
  const openIds = alerts
    .filter((a) => a.ended_at === null)
    .map((a) => a.id)
    .sort();
  assert.deepEqual(
    openIds,
    [...stored.values()]
      .map((x) => x.open_alert_id)
      .filter((x) => x !== null)
      .sort(),
    'every open alert is held by its series state',
  );
  // The outbox holds exactly the events of those alerts.
  const events = [...s.notifier.db.outbox.getRange({})].map(({ value }) => value.kind);
  assert.equal(events.filter((k) => k === 'alert.opened').length, opened);
  assert.equal(events.filter((k) => k === 'alert.resolved').length, closed);

  // Resume: the next slot applies, the last one stored never again.
  const last = m.last_slot_at!;
  const again = applySlot(m, last, verdicts(m, crashSlotValues(last)), stored);
  assert.equal((await s.monitors.recordSlot(m, last, again, METRIC)).applied, false);
  const next = applySlot(m, last + CRASH_MIN, verdicts(m, crashSlotValues(last + CRASH_MIN)), stored);
  s.clock.set(last + CRASH_MIN + 1000);
  assert.equal((await s.monitors.recordSlot(m, last + CRASH_MIN, next, METRIC)).applied, true);
});
