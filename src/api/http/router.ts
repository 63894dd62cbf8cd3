import { ApiError } from '../../errors.js';
import { isIdKind, type IdKind } from '../../ids.js';
import type { JsonSchema, Method, RouteDef } from './route.js';
import { compileValidator, type Validator } from '../../http/validation.js';

/** A route with its validators compiled and its path split into segments. */
export interface CompiledRoute {
  def: RouteDef;
  endpoint: string;
  segments: string[];
  validate: { params?: Validator; query?: Validator; body?: Validator };
  /** Path parameters that name a resource (`pathIdSchema`), in path order, with the kind of id each takes. */
  ids: { name: string; kind: IdKind }[];
}

export interface RouteMatch {
  route: CompiledRoute;
  params: Record<string, string>;
}

/**
 * Matches method + path against the route table. Literal segments win over `:param` segments, so
 * `/v1/projects/:id/force` and `/v1/projects/:id/pipeline` never shadow each other.
 */
export class Router {
  readonly routes: CompiledRoute[] = [];

  constructor(defs: RouteDef[]) {
    const seen = new Set<string>();
    for (const def of defs) {
      const endpoint = `${def.method} ${def.path}`;
      if (seen.has(endpoint)) throw new Error(`route declared twice: ${endpoint}`);
      seen.add(endpoint);
      const validate: CompiledRoute['validate'] = {};
      if (def.schema?.params) validate.params = compileValidator('params', def.schema.params);
      if (def.schema?.query) validate.query = compileValidator('query', def.schema.query);
      if (def.schema?.body) validate.body = compileValidator('body', def.schema.body);
      const segments = split(def.path);
      this.routes.push({ def, endpoint, segments, validate, ids: pathIds(segments, def.schema?.params) });
    }
    // Most literal first: at each position a literal beats a parameter.
    this.routes.sort((a, b) => specificity(b.segments).localeCompare(specificity(a.segments)));
  }

  /** The route for method + path, or a 404 / 405 ApiError. */
  match(method: string, path: string): RouteMatch {
    const parts = split(path);
    let pathMatched = false;
    const allowed = new Set<string>();
    for (const route of this.routes) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      pathMatched = true;
      allowed.add(route.def.method);
      if (route.def.method === method) return { route, params };
    }
    if (pathMatched) {
      throw new ApiError(
        'method_not_allowed',
        `${method} is not allowed on ${path}; allowed: ${[...allowed].join(', ')}`,
        {
          headers: { allow: [...allowed].join(', ') },
        },
      );
    }
    throw new ApiError('route_not_found', `No endpoint ${method} ${path}`);
  }

  methods(): Method[] {
    return [...new Set(this.routes.map((r) => r.def.method))];
  }
}

function pathIds(segments: string[], schema: JsonSchema | undefined): CompiledRoute['ids'] {
  const properties = (schema?.properties ?? {}) as Record<string, { pathId?: unknown }>;
  const ids: CompiledRoute['ids'] = [];
  for (const s of segments) {
    if (!s.startsWith(':')) continue;
    const kind = properties[s.slice(1)]?.pathId;
    if (kind === undefined) continue;
    if (!isIdKind(kind)) throw new Error(`path parameter ${s} names an unknown kind of id: ${String(kind)}`);
    ids.push({ name: s.slice(1), kind });
  }
  return ids;
}

function split(path: string): string[] {
  return path.split('/').filter((s) => s.length > 0);
}

function specificity(segments: string[]): string {
  return segments.map((s) => (s.startsWith(':') ? '0' : '1')).join('') + '|'.repeat(segments.length);
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const v = parts[i]!;
    if (p.startsWith(':')) {
      let decoded: string;
      try {
        decoded = decodeURIComponent(v);
      } catch {
        return null;
      }
      params[p.slice(1)] = decoded;
    } else if (p !== v) {
      return null;
    }
  }
  return params;
}
