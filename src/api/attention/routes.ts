import type { Services } from '../../services.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { params } from '../http/schemas.js';
import { requireProject } from '../projects/routes.js';

/** GET /v1/projects/:project_id/attention (spec api-1: Attention item; docs/attention.md). */
export function attentionRoutes(s: Pick<Services, 'attention' | 'clock' | 'projects'>): RouteDef[] {
  return [
    defineRoute<unknown, unknown, { project_id: string }>({
      method: 'GET',
      path: '/v1/projects/:project_id/attention',
      scope: 'projects:read',
      summary: 'What in a project needs attention now (and what recently stopped), most urgent first',
      schema: { params: params({ project_id: 'project' }) },
      handler: async (ctx) => {
        const project = requireProject(s, ctx.principal.teamId, ctx.params.project_id);
        const items = await s.attention.itemsFor(project.id, s.clock.now());
        return { data: items.map((i) => ({ object: 'attention_item', ...i })) };
      },
    }),
  ];
}
