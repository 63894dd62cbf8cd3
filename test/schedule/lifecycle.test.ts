import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/log.js';
import { Lifecycle } from '../../src/schedule/lifecycle.js';

function recordingLog(lines: string[]) {
  return createLogger('error', new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }));
}

test('participants start in order, stop in reverse; a failing stop is logged and the rest still stop', async () => {
  const events: string[] = [];
  const logged: string[] = [];
  const life = new Lifecycle(recordingLog(logged));
  const part = (name: string, failStop = false) => ({
    name,
    start: async () => {
      await new Promise((r) => setImmediate(r));
      events.push(`start ${name}`);
    },
    stop: () => {
      events.push(`stop ${name}`);
      if (failStop) throw new Error(`${name} would not stop`);
    },
  });
  life.add(part('store'));
  life.add({ name: 'no-hooks' });
  life.add(part('pipeline', true));
  await life.start();
  life.add(part('http'));
  await life.start();
  await life.start();
  assert.deepEqual(life.names(), ['store', 'no-hooks', 'pipeline', 'http']);
  const stopping = life.stop();
  assert.equal(life.stop(), stopping, 'stop is idempotent');
  await stopping;
  assert.deepEqual(events, ['start store', 'start pipeline', 'start http', 'stop http', 'stop pipeline', 'stop store']);
  assert.equal(logged.length, 1);
  assert.match(logged[0]!, /"participant":"pipeline".*stop failed/);
  assert.throws(() => life.add(part('late')), /stopping/);
});

test('a participant whose start fails is not stopped; the ones before it are', async () => {
  const events: string[] = [];
  const life = new Lifecycle(createLogger('silent'));
  life.add({ name: 'a', stop: () => void events.push('stop a') });
  life.add({
    name: 'b',
    start: () => {
      throw new Error('no');
    },
    stop: () => void events.push('stop b'),
  });
  await assert.rejects(life.start(), /no/);
  await life.stop();
  assert.deepEqual(events, ['stop a']);
});
