import type { Services } from '../services.js';
import type { RouteDef } from './http/route.js';
import { projectRoutes } from './projects/routes.js';
import { sourceRoutes } from './sources/routes.js';
import { ingestKeyRoutes } from './ingest-keys/routes.js';
import { collectionRoutes } from './collections/routes.js';
import { systemRoutes } from './system/routes.js';
import { sessionRoutes } from './sessions/routes.js';
import { keyRoutes } from './keys/routes.js';
import { teamRoutes } from './teams/routes.js';
import { userRoutes } from './users/routes.js';
import { roleRoutes } from './roles/routes.js';
import { memberRoutes } from './members/routes.js';
import { pipelineRoutes } from './pipeline/routes.js';
import { schemaRoutes } from './schemas/routes.js';
import { unprocessableRoutes } from './schemas/unprocessable-routes.js';
import { viewRoutes } from './views/routes.js';
import { metricRoutes } from './metrics/routes.js';
import { lateDataRoutes } from './late-data/routes.js';
import { pageRoutes } from './pages/routes.js';
import { componentRoutes } from './components/routes.js';
import { webRoutes } from '../web/routes.js';
import { pullRoutes } from './pulls/routes.js';
import { checkRoutes } from './checks/routes.js';
import { whoamiRoutes } from './whoami/routes.js';
import { monitorRoutes } from './monitors/routes.js';
import { alertRoutes } from './alerts/routes.js';
import { attentionRoutes } from './attention/routes.js';
import { notificationChannelRoutes } from './notification-channels/routes.js';

/** The complete route table, one module per resource. */
export function allRoutes(s: Services): RouteDef[] {
  const table: RouteDef[] = [];
  table.push(...systemRoutes(s, () => table), ...projectRoutes(s));
  table.push(...sourceRoutes(s), ...ingestKeyRoutes(s), ...collectionRoutes(s));
  table.push(...pipelineRoutes(s));
  table.push(...schemaRoutes(s));
  table.push(...unprocessableRoutes(s));
  table.push(...viewRoutes(s));
  table.push(...metricRoutes(s), ...lateDataRoutes(s));
  table.push(...pageRoutes(s), ...componentRoutes(s));
  // Web routes (HTML, assets, SSE) outside /v1; not in the OpenAPI document.
  table.push(...webRoutes(s));
  table.push(...pullRoutes(s), ...checkRoutes(s));
  table.push(...monitorRoutes(s), ...alertRoutes(s), ...attentionRoutes(s), ...notificationChannelRoutes(s));
  table.push(
    ...sessionRoutes(s),
    ...keyRoutes(s),
    ...teamRoutes(s),
    ...userRoutes(s),
    ...roleRoutes(s),
    ...memberRoutes(s),
  );
  table.push(...whoamiRoutes(s));
  return table;
}
