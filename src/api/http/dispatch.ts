import { ApiError, notFound, toApiError, type FieldIssue } from '../../errors.js';
import { idLabel, isId } from '../../ids.js';
import { hasScope } from '../../auth/scopes.js';
import type { Logger } from '../../log.js';
import type { Envelope } from '../../http/envelope.js';
import { errorEnvelope, successEnvelope } from '../../http/envelope.js';
import type { RouteMatch } from './router.js';
import type { Method, Principal, RequestContext, WebBody } from './route.js';
import { checkCsrf } from './csrf.js';
import { errorPage } from './html.js';
import { responseJson } from './raw-json.js';
import { assertValid } from '../../http/validation.js';

/** What the transport gathered for one control-plane request. */
export interface RawRequest {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body: Buffer | null;
}

export interface DispatchResult {
  status: number;
  envelope: Envelope;
  headers: Record<string, string>;
  /** A web route's body (HTML, bytes, an SSE stream): sent instead of the envelope. */
  web?: WebBody;
}

/** What dispatch needs to know about the caller's team before any handler runs. */
export interface TeamState {
  status: string;
  deleted_at: string | null;
}

export interface DispatchDeps {
  authenticate(headers: Record<string, string>): Principal;
  team(teamId: string): TeamState | undefined;
  /** Where `failure` logs every 5xx with its cause. */
  log: Logger;
}

/**
 * Runs one matched request through the fixed order: authenticate → authorise → parse →
 * validate params, query, body → path ids → handler → envelope. Every failure becomes an error envelope.
 */
export async function dispatch(deps: DispatchDeps, match: RouteMatch, raw: RawRequest): Promise<DispatchResult> {
  const { route, params } = match;
  const def = route.def;
  try {
    let principal: Principal | undefined;
    if (def.auth === 'optional') {
      principal = optionalPrincipal(deps, raw.headers);
      if (principal) checkCsrf(principal, def.method, raw.headers);
    } else if (def.auth !== 'none') {
      principal = deps.authenticate(raw.headers);
      // A browser's cookie is sent by cross-site forms too: its writes must prove they come from our page.
      checkCsrf(principal, def.method, raw.headers);
      if (!principal.teamId && !def.allowNoTeam) {
        throw new ApiError('forbidden', 'The user is not a member of any team; create one with POST /v1/teams');
      }
      const team = principal.teamId ? deps.team(principal.teamId) : undefined;
      // A team scheduled for deletion is frozen until an Owner restores it (docs/accounts.md):
      // its keys stop at once, its sessions may only read or restore teams and manage themselves.
      if (team?.deleted_at && (principal.kind === 'key' || !def.allowWhenTeamDeleted)) {
        throw new ApiError(
          'team_scheduled_for_deletion',
          `Team ${principal.teamId} is scheduled for deletion (since ${team.deleted_at}); an Owner can restore it with POST /v1/teams/${principal.teamId} {"deleted_at": null}`,
        );
      }
      if (def.scope !== 'authenticated' && !hasScope(principal.scopes, def.scope)) {
        throw new ApiError('forbidden', `This operation needs the ${def.scope} scope`);
      }
      if (def.method !== 'GET' && !def.allowWhenRestricted && team?.status === 'restricted') {
        throw new ApiError('team_restricted');
      }
    }

    const query = parseQuery(raw.query);
    const body = parseBody(raw);
    const issues: FieldIssue[] = [];
    if (route.validate.params) issues.push(...route.validate.params(params));
    if (route.validate.query) issues.push(...route.validate.query(query));
    else if (Object.keys(query).length > 0)
      issues.push(
        ...Object.keys(query).map((k) => ({ field: `query.${k}`, message: 'is not a known parameter; remove it' })),
      );
    if (route.validate.body) issues.push(...route.validate.body(body ?? {}));
    else if (body !== undefined && !(isPlainObject(body) && Object.keys(body).length === 0)) {
      issues.push({ field: 'body', message: 'must be empty: this endpoint takes no body' });
    }
    assertValid(issues);
    // A path id of another shape names nothing: 404 like an id that does not exist, checked after
    // the other parameters as a lookup would be, so the two cannot be told apart.
    for (const { name, kind } of route.ids) {
      const value = params[name]!;
      if (!isId(kind, value)) throw notFound(`${idLabel(kind)} ${value}`);
    }

    const ctx: RequestContext = {
      method: def.method as Method,
      endpoint: route.endpoint,
      params,
      query,
      body: body ?? {},
      headers: raw.headers,
      principal: principal as Principal,
    };
    const reply = await def.handler(ctx);
    const status = reply.status ?? 200;
    const result: DispatchResult = {
      status,
      envelope: successEnvelope(route.endpoint, status, reply.data, reply.pagination ?? null, reply.message),
      headers: reply.headers ?? {},
    };
    if (reply.web) result.web = reply.web;
    // The page's own data: the envelope as bytes, so that the web transport compresses it (a dashboard's redraws are most of its traffic).
    else if (def.web === 'data')
      result.web = {
        kind: 'bytes',
        body: responseJson(result.envelope),
        contentType: 'application/json; charset=utf-8',
      };
    return result;
  } catch (err) {
    const result = failure(deps.log, raw.method, route.endpoint, err);
    // A page route fails as a page a person reads; a data route as the envelope its script reads.
    if (def.web === 'page')
      result.web = { kind: 'bytes', body: errorPage(result.envelope), contentType: 'text/html; charset=utf-8' };
    return result;
  }
}

/**
 * The one place a control-plane failure becomes its answer: the error envelope for `err` (anything
 * not an ApiError is a `server_error`). Every answer of status 500 or more is logged here at error
 * level with the error thrown — message and stack with its `cause` chain — so that the first bug in
 * an endpoint can be found from the log. `endpoint` is the envelope's: the route pattern, or method
 * and path when no route matched (never the query string, which may carry secrets). 4xx answers are
 * the caller's mistake and only appear in the request log.
 */
export function failure(log: Logger, method: string, endpoint: string, err: unknown): DispatchResult {
  const apiErr = toApiError(err);
  if (apiErr.status >= 500) {
    // A wrapped error is logged as thrown; an ApiError thrown as such carries its own cause.
    log.error(
      { err: apiErr === err ? apiErr : err, method, route: endpoint, status: apiErr.status, code: apiErr.code },
      `${endpoint} answered ${apiErr.status} ${apiErr.code}`,
    );
  }
  return { status: apiErr.status, envelope: errorEnvelope(endpoint, apiErr), headers: apiErr.headers };
}

/**
 * The caller of an `auth: 'optional'` route: valid credentials (header or session cookie) give a
 * principal; none, or ones that are not valid (an expired cookie), give none, and the handler
 * decides (a private page answers its sign-in form). A team that is frozen counts as none.
 */
function optionalPrincipal(deps: DispatchDeps, headers: Record<string, string>): Principal | undefined {
  try {
    const principal = deps.authenticate(headers);
    const team = principal.teamId ? deps.team(principal.teamId) : undefined;
    if (!team || team.deleted_at) return undefined;
    return principal;
  } catch (err) {
    if (err instanceof ApiError && err.status < 500) return undefined;
    throw err;
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseQuery(qs: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!qs) return out;
  for (const [k, v] of new URLSearchParams(qs)) {
    if (k in out)
      throw new ApiError('request_validation_failed', `query.${k} is given more than once; send it once`, {
        details: [{ field: `query.${k}`, message: 'is given more than once' }],
      });
    out[k] = v;
  }
  return out;
}

function parseBody(raw: RawRequest): unknown {
  if (!raw.body || raw.body.length === 0) return undefined;
  const type = raw.headers['content-type'];
  // Bodies are always JSON; curl's default form type is accepted so `curl -d '{…}'` just works.
  if (type && /^(multipart\/|application\/octet-stream)/i.test(type)) {
    throw new ApiError('unsupported_media_type', `The body must be JSON; Content-Type was "${type}"`);
  }
  try {
    return JSON.parse(raw.body.toString('utf8'));
  } catch (err) {
    throw new ApiError('request_malformed_json', `The request body is not valid JSON: ${(err as Error).message}`);
  }
}
