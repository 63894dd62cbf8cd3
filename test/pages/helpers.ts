import type { TestServer } from '../helpers/server.js';
import { ok } from '../catalog/helpers.js';
import { SCRIPT, viewSetup } from '../transform/view-helpers.js';

const OUT = [
  { name: 'path', type: 'string' },
  { name: 'duration', type: 'number' },
];

/** A project with a view and `count` metrics on it; `pages` is the project's pages path. */
export async function pageSetup(srv: TestServer, opts: { name?: string; metrics?: number } = {}) {
  const setup = await viewSetup(srv, opts.name ?? 'Shop');
  const view = ok(
    await srv.post(setup.views, {
      name: 'Requests',
      collection_id: setup.collection.id,
      transform_script: SCRIPT,
      transform_mode: 'manual',
      output_schema: OUT,
    }),
    201,
  );
  const metricsPath = `/v1/projects/${setup.project.id}/metrics`;
  const metrics: any[] = [];
  for (let i = 0; i < (opts.metrics ?? 2); i++)
    metrics.push(ok(await srv.post(metricsPath, { name: `Metric ${i}`, view_id: view.id, group_by: ['path'] }), 201));
  return { ...setup, view, metrics, metricsPath, pages: `/v1/projects/${setup.project.id}/pages` };
}
