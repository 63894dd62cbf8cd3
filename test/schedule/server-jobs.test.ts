import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.js';
import { PURGE_JOB } from '../../src/catalog/purge-scheduler.js';
import { TestServer } from '../helpers/server.js';
import { createProject, fails, ok } from '../catalog/helpers.js';

const DAY = 24 * 3600 * 1000;

test('the purge runs as a scheduler job, driven by the injected clock; a job registered on the server stops with it', async (t) => {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00Z'));
  const srv = await TestServer.start({ clock, env: { SLUICE_PIPELINE: '0' } });
  t.after(() => srv.stop());
  const scheduler = srv.sluice.services.scheduler;
  const purge = scheduler.get(PURGE_JOB);
  assert.ok(purge);
  assert.equal(purge.nextAt(), clock.now() + 60_000);

  const project = await createProject(srv);
  ok(await srv.delete(`/v1/projects/${project.id}`));
  clock.advance(7 * DAY);
  // With a clock moved by hand, time-due runs wait for runDue (the timer does not run them).
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(purge.lastAt(), null);
  await scheduler.runDue();
  assert.equal(purge.lastAt(), clock.now());
  fails(await srv.get(`/v1/projects/${project.id}`), 404, 'not_found');

  // Kicks run on their own even with a hand-moved clock.
  let kicked = 0;
  let stopped = 0;
  const job = scheduler.register({
    name: 'test:kick',
    schedule: { kick: true },
    run: () => void kicked++,
    stop: () => void stopped++,
  });
  job.kick();
  for (let i = 0; i < 200 && kicked === 0; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(kicked, 1);
  await srv.sluice.stop();
  assert.equal(stopped, 1, 'the server stops the scheduler and its jobs');
});
