import type { RouteDef, JsonSchema } from '../http/route.js';

/** Strip our ajv-only keywords (`errorHint`, `pathId`) so the document is plain JSON Schema 2020-12. */
function clean(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(clean);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'errorHint') {
      if (!('description' in schema)) out.description = v;
      continue;
    }
    if (k === 'pathId') continue;
    out[k] = clean(v);
  }
  return out;
}

const envelope = {
  type: 'object',
  required: ['message', 'data', 'status', 'error', 'pagination', 'endpoint'],
  properties: {
    message: { type: 'string' },
    data: {},
    status: { type: 'integer' },
    error: {
      oneOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['code', 'message'],
          properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
        },
      ],
    },
    pagination: {
      oneOf: [
        { type: 'null' },
        {
          type: 'object',
          properties: {
            next_cursor: { type: ['string', 'null'] },
            prev_cursor: { type: ['string', 'null'] },
            limit: { type: 'integer' },
          },
        },
      ],
    },
    endpoint: { type: 'string' },
  },
};

/**
 * OpenAPI 3.1 generated from the route table the server validates with, so the two cannot drift.
 */
export function buildOpenApi(routes: RouteDef[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  // Web routes (pages, assets, the browser's data) answer HTML and bytes, not the documented /v1 API.
  for (const r of routes) {
    if (r.web) continue;
    const path = r.path.replace(/:([a-z_]+)/g, '{$1}');
    const parameters: unknown[] = [];
    const p = r.schema?.params as { properties?: Record<string, JsonSchema> } | undefined;
    for (const [name, schema] of Object.entries(p?.properties ?? {}))
      parameters.push({ name, in: 'path', required: true, schema: clean(schema) });
    const q = r.schema?.query as { properties?: Record<string, JsonSchema>; required?: string[] } | undefined;
    for (const [name, schema] of Object.entries(q?.properties ?? {}))
      parameters.push({ name, in: 'query', required: q?.required?.includes(name) ?? false, schema: clean(schema) });
    const op: Record<string, unknown> = {
      summary: r.summary,
      operationId: `${r.method.toLowerCase()}_${r.path.replace(/[/:]+/g, '_').replace(/^_|_$/g, '')}`,
      'x-scope': r.auth === 'none' ? null : r.scope,
      security: r.auth === 'none' ? [] : [{ bearer: [] }],
      parameters,
      responses: {
        default: {
          description: 'The envelope; on failure data is null and error carries code, message and details',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
        },
      },
    };
    if (r.schema?.body)
      op.requestBody = { required: true, content: { 'application/json': { schema: clean(r.schema.body) } } };
    (paths[path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Sluice API', version: '1' },
    servers: [{ url: serverUrl }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key or a session token from POST /v1/sessions' },
      },
      schemas: { Envelope: envelope },
    },
    paths,
  };
}
