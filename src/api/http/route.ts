import type { Pagination } from '../../http/envelope.js';
import type { ScopeRequirement } from '../../auth/scopes.js';
import type { Principal } from '../../auth/principal.js';

export type { Principal };

export type Method = 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';

import type { JsonSchema } from '../../http/json-schema.js';

export type { JsonSchema };

export interface RequestContext<B = unknown, Q = Record<string, unknown>, P = Record<string, string>> {
  method: Method;
  /** The route pattern, e.g. `GET /v1/projects/:project_id`. */
  endpoint: string;
  params: P;
  query: Q;
  body: B;
  /** Lowercased request headers. */
  headers: Record<string, string>;
  /** Set on every route whose `auth` is `required` (the default); on `optional` routes when credentials were valid. */
  principal: Principal;
}

/** A Server-Sent Events stream opened by a web reply (`WebBody` `sse`). */
export interface SseStream {
  /** Send one event; false once the client has gone. */
  send(event: string, data: string): boolean;
  /** A comment line (keeps proxies from closing an idle stream). */
  comment(text: string): boolean;
  close(): void;
  /** Called once when the stream ends, whoever ends it (client, server stop, `close`). */
  onClose(fn: () => void): void;
}

/**
 * A reply that is not the JSON envelope (web routes only): bytes with their content type (HTML, an
 * asset, a 304 with no body), or an SSE stream the handler feeds.
 */
export type WebBody =
  | {
      kind: 'bytes';
      body: Buffer | string;
      contentType: string /** Already compressed (a precompressed asset): sent as is. */;
      encoded?: boolean;
    }
  | { kind: 'sse'; open(stream: SseStream): void };

export interface Reply {
  status?: number;
  data: unknown;
  pagination?: Pagination | null;
  message?: string;
  headers?: Record<string, string>;
  /** Web routes: the body to send instead of the envelope (`data` is then ignored). */
  web?: WebBody;
}

/**
 * One endpoint, declared as data. `scope` is what the caller must hold; `authenticated` means any
 * valid credential (spec: "none stated"); `auth: 'none'` routes (sign-in) skip authentication.
 */
export interface RouteDef<B = any, Q = any, P = any> {
  method: Method;
  path: string;
  scope: ScopeRequirement | 'authenticated';
  /** `optional`: the handler runs with or without valid credentials (`principal` unset without). */
  auth?: 'required' | 'none' | 'optional';
  /**
   * A web route (src/web): `page` answers HTML and its failures as an HTML page; `data` answers
   * JSON for the browser code. Both are left out of the OpenAPI document, which covers `/v1`.
   */
  web?: 'page' | 'data';
  /** Callable by a session whose user belongs to no team (creating a team, reading oneself). */
  allowNoTeam?: boolean;
  /** Allowed while the team is `restricted` (read-only) even though the method writes. */
  allowWhenRestricted?: boolean;
  /**
   * Callable by a session whose current team is scheduled for deletion (reading and restoring a team,
   * the user's own account). API keys of such a team are refused on every route.
   */
  allowWhenTeamDeleted?: boolean;
  summary: string;
  schema?: { params?: JsonSchema; query?: JsonSchema; body?: JsonSchema; response?: JsonSchema };
  /** Body limit for this route, bytes (default: config.maxBodyBytes). */
  maxBodyBytes?: number;
  handler(ctx: RequestContext<B, Q, P>): Promise<Reply> | Reply;
}

/** Identity helper that keeps a route's type parameters checked at its declaration. */
export function defineRoute<B = unknown, Q = Record<string, unknown>, P = Record<string, string>>(
  def: RouteDef<B, Q, P>,
): RouteDef<B, Q, P> {
  return def;
}
