/**
 * What the in-process query scripts (now-questions.ts, series-answer.ts) set up first on a test
 * server: a project whose late window is `lateWindowMinutes`, one collection fed through `send`, and
 * the Events view (region, latency, user_id) with its first record in it. The test helpers are passed
 * in, so a script may take them from another build's tree.
 */
import type { ok as okFn } from '../../test/catalog/helpers.js';
import type { TestServer } from '../../test/helpers/server.js';
import type { ingestProject as ingestFn } from '../../test/rollup/rollup-helpers.js';

export async function eventsView(
  srv: TestServer,
  helpers: { ok: typeof okFn; ingestProject: typeof ingestFn },
  name: string,
  lateWindowMinutes: number,
): Promise<{ project: string; metrics: string; viewId: string; send: Awaited<ReturnType<typeof ingestFn>>['send'] }> {
  const { ok, ingestProject } = helpers;
  const { project, send } = await ingestProject(srv, name, 'events');
  ok(await srv.post(project, { late_data_window_minutes: lateWindowMinutes }));
  await send([{ region: 'r0', latency: 1, user_id: 'u0' }]);
  await srv.sluice.services.pipeline!.idle(30_000);
  const [collection] = ok(await srv.get(`${project}/collections`));
  const view = ok(
    await srv.post(`${project}/views`, {
      name: 'Events',
      collection_id: collection.id,
      transform_mode: 'manual',
      transform_script:
        'function transform(r) { return { region: r.region, latency: r.latency, user_id: r.user_id }; }',
      output_schema: [
        { name: 'region', type: 'string' },
        { name: 'latency', type: 'number' },
        { name: 'user_id', type: 'string' },
      ],
    }),
    201,
  );
  for (let i = 0; i < 200 && ok(await srv.get(`${project}/views/${view.id}/records`)).length === 0; i++)
    await new Promise((r) => setTimeout(r, 50));
  return { project, metrics: `${project}/metrics`, viewId: view.id, send };
}

/** The `p` quantile of `a` (nearest rank). */
export function quantileOf(a: ArrayLike<number>, p: number): number {
  const s = Array.from(a).sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
}
