import type { Services } from '../../services.js';
import { defineRoute, type RouteDef } from '../http/route.js';
import { buildOpenApi } from './openapi.js';

/** Self-description. `table` is the complete route table, read lazily so this route lists itself too. */
export function systemRoutes(s: Pick<Services, 'config'>, table: () => RouteDef[]): RouteDef[] {
  let doc: Record<string, unknown> | null = null;
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/openapi.json',
      scope: 'authenticated',
      auth: 'none',
      summary: 'OpenAPI 3.1 document of this API, generated from the route table',
      handler: () => ({ data: (doc ??= buildOpenApi(table(), s.config.publicUrl)) }),
    }),
  ];
}
