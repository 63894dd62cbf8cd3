/**
 * Child process of monitor-crash.test.ts: applies slots of a sustained each_series monitor to real
 * LMDB through the real MonitorCatalog (and the notifier's outbox) as fast as it can, printing the
 * slot after each commit, until it is killed with SIGKILL.
 */
import { ManualClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { Store } from '../../src/store/db.js';
import { MonitorCatalog } from '../../src/monitor/monitor-catalog.js';
import { applySlot, verdicts } from '../../src/monitor/evaluate.js';
import { Notifier } from '../../src/notify/notifier.js';
import { crashSlotValues, CRASH_T0, CRASH_MIN } from './crash-pattern.js';

const [dataDir, projectId, monitorId] = process.argv.slice(2) as [string, string, string];
const clock = new ManualClock(CRASH_T0);
const log = createLogger('silent');
const store = new Store(dataDir);
const monitors = new MonitorCatalog(store, clock, log);
monitors.events = new Notifier({
  store,
  clock,
  log,
  outbound: () => {
    throw new Error('no sends in the child');
  },
  publicUrl: () => 'http://sluice.test',
});
const metric = { id: 'met_cccccccccccccccccccc', name: 'Crash', project_id: projectId } as never;

for (;;) {
  const m = monitors.get(projectId, monitorId)!;
  const at = (m.last_slot_at ?? CRASH_T0) + CRASH_MIN;
  clock.set(at + 1000);
  const previous = new Map(monitors.statesOf(m.id).map((s) => [s.id, s]));
  const outcome = applySlot(m, at, verdicts(m, crashSlotValues(at)), previous);
  const res = await monitors.recordSlot(m, at, outcome, metric);
  if (!res.applied) throw new Error(`slot ${at} not applied`);
  process.stdout.write(`${at}\n`);
}
