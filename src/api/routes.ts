import type { Services } from '../services.js';
import type { RouteDef } from './http/route.js';
import { projectRoutes } from './projects/routes.js';
import { systemRoutes } from './system/routes.js';

/** The complete route table, one module per resource. */
export function allRoutes(s: Services): RouteDef[] {
  const table: RouteDef[] = [];
  table.push(...systemRoutes(s, () => table), ...projectRoutes(s));
  return table;
}
