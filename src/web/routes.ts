import { ApiError } from '../errors.js';
import { hashPassword, verifyPassword } from '../auth/password.js';
import {
  clearedSessionCookie,
  csrfToken,
  isSecureRequest,
  sessionCookie,
  sessionFromCookie,
} from '../auth/session-cookie.js';
import { TIME_RANGES } from '../rollup/metric-records.js';
import type { Services } from '../services.js';
import type { PageRecord } from '../catalog/pages.js';
import { sameOrigin } from '../api/http/csrf.js';
import { defineRoute, type JsonSchema, type Principal, type Reply, type RouteDef } from '../api/http/route.js';
import { object } from '../api/http/schemas.js';
import { pageForViewer } from './page-access.js';
import { DEFAULT_WIDTH_PX, pageCards, viewerWindow, widthOf, type PageQuery } from './page-model.js';
import { bootWindow, renderPage, renderSignIn, type PageBoot } from './render.js';

const slugParam: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  errorHint: 'must be a page slug or page id',
};
const componentParam: JsonSchema = { type: 'string', minLength: 1, maxLength: 64, errorHint: 'must be a component id' };

/** The viewer's window; a page answers no other parameter (nothing that could widen what it shows). */
const windowQuery: Record<string, JsonSchema> = {
  time_range: { enum: [...TIME_RANGES] },
  timezone: { type: 'string', minLength: 1, maxLength: 64, errorHint: 'must be an IANA time zone name' },
  start_at: { type: 'string', format: 'date-time', errorHint: 'must be an ISO 8601 date-time' },
  end_at: { type: 'string', format: 'date-time', errorHint: 'must be an ISO 8601 date-time' },
};
/** A page's address: the window and the hidden series (drawn by the browser only). */
const stateQuery: Record<string, JsonSchema> = {
  ...windowQuery,
  hide: {
    type: 'string',
    maxLength: 4096,
    errorHint: 'must be a comma-separated list of <component id>:<series hash>',
  },
};
/** The page's data: the window and the width the cards are drawn at. */
const dataQuery: Record<string, JsonSchema> = {
  ...windowQuery,
  width: { type: 'integer', minimum: 50, maximum: 4096, errorHint: 'must be an integer from 50 to 4096 (CSS pixels)' },
};

const HTML = 'text/html; charset=utf-8';
/** Chart types drawn by the ECharts chunk (src/web/client/chart-echarts.ts). */
const ECHARTS_TYPES = new Set(['pie', 'radar', 'gauge', 'calendar']);
/**
 * Pages run only their own bundled scripts (an injected `<script>` would not run even if it got
 * through escaping); they may be framed anywhere (cards are embeddable). Styles inline are the charts'.
 */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'",
  'cache-control': 'no-store',
  'referrer-policy': 'same-origin',
};

const signInBody = object(
  {
    email: { type: 'string', minLength: 1, maxLength: 254, errorHint: 'must be the email address of the account' },
    password: { type: 'string', minLength: 1, maxLength: 1024, errorHint: 'must be the password of the account' },
  },
  ['email', 'password'],
);

/**
 * Web routes (docs/pages.md): the browser code, signing a browser in and out, each page at
 * `/p/<slug>` and each card at `/p/<slug>/c/<component id>` with its first data inline, the page's
 * data for redraws, and its live refresh stream. Declared in the route table like the /v1 routes.
 */
export function webRoutes(s: Services): RouteDef[] {
  let decoy: Promise<string> | null = null;

  const htmlPage = async (
    slug: string,
    principal: Principal | undefined,
    query: PageQuery,
    headers: Record<string, string>,
    only?: string,
  ): Promise<Reply> => {
    const entry = s.webAssets.entry('page');
    let page: PageRecord;
    try {
      page = pageForViewer(s, slug, principal);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'sign_in_required') {
        return {
          status: 401,
          data: null,
          headers: PAGE_HEADERS,
          web: { kind: 'bytes', body: renderSignIn(slug, entry), contentType: HTML },
        };
      }
      throw err;
    }
    const window = viewerWindow(page, query);
    const cards = await pageCards(s, page, window, DEFAULT_WIDTH_PX, only);
    const charts = s.webAssets.entry('chart-echarts');
    // A page with an ECharts card fetches that chunk while its HTML is parsed, not after its script ran.
    const withCharts =
      entry && charts && cards.some((c) => ECHARTS_TYPES.has(c.metric.ui_chart_type))
        ? { ...entry, preload: [...entry.preload, charts.js] }
        : entry;
    const token = principal?.viaCookie ? sessionFromCookie(headers) : undefined;
    const boot: PageBoot = {
      // The address the viewer came by (slug or page id): the page's data and events are read there too.
      slug,
      name: page.name,
      component: only ?? null,
      window: bootWindow(window),
      defaults: { time_range: page.time_range, timezone: page.timezone },
      hide: query.hide ? query.hide.split(',').filter(Boolean).slice(0, 200) : [],
      width: DEFAULT_WIDTH_PX,
      cards,
      csrf: token ? csrfToken(token) : null,
    };
    return {
      data: null,
      headers: PAGE_HEADERS,
      web: { kind: 'bytes', body: renderPage(page, boot, withCharts), contentType: HTML },
    };
  };

  return [
    defineRoute<unknown, unknown, { file: string }>({
      method: 'GET',
      path: '/assets/:file',
      scope: 'authenticated',
      auth: 'none',
      web: 'page',
      summary: 'The browser code of the pages: hashed, immutable, precompressed',
      schema: {
        params: object({
          file: {
            type: 'string',
            maxLength: 128,
            pattern: '^[A-Za-z0-9_.-]+$',
            errorHint: 'must be an asset file name',
          },
        }),
      },
      handler: (ctx) => s.webAssets.serve(ctx.params.file, ctx.headers),
    }),
    defineRoute<{ email: string; password: string }>({
      method: 'POST',
      path: '/web/session',
      scope: 'authenticated',
      auth: 'none',
      web: 'data',
      summary: 'Sign a browser in: sets the HttpOnly session cookie',
      schema: { body: signInBody },
      handler: async (ctx) => {
        // Login CSRF: another site must not sign a browser in to an account of its choosing.
        if (!sameOrigin(ctx.headers))
          throw new ApiError('csrf_failed', `The request's Origin (${ctx.headers.origin}) is not this server`);
        const user = s.accounts.getUserByEmail(ctx.body.email.trim());
        const hash = user?.password_hash ?? (await (decoy ??= hashPassword('decoy-password-never-matches')));
        const ok = await verifyPassword(ctx.body.password, hash);
        if (!user?.password_hash || !ok)
          throw new ApiError('auth_invalid_credentials', 'The email or password is not correct');
        const { token, session } = await s.accounts.createSession(user.id);
        const secure = isSecureRequest(ctx.headers, s.config.publicUrl);
        // The token itself stays in the HttpOnly cookie: the page's scripts never see it.
        return {
          status: 201,
          data: {
            object: 'web_session',
            user_id: user.id,
            expires_at: session.expires_at,
            csrf_token: csrfToken(token),
          },
          headers: {
            'set-cookie': sessionCookie(token, Date.parse(session.expires_at), secure),
            'cache-control': 'no-store',
          },
        };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/web/session',
      scope: 'authenticated',
      auth: 'optional',
      web: 'data',
      summary: "Sign a browser out: ends the cookie's session and clears the cookie",
      handler: async (ctx) => {
        const p = ctx.principal as Principal | undefined;
        if (p?.viaCookie && p.userId && p.sessionId) {
          const session = s.accounts.sessions.get(p.userId, p.sessionId);
          if (session) await s.accounts.deleteSession(session);
        }
        return {
          data: null,
          headers: { 'set-cookie': clearedSessionCookie(isSecureRequest(ctx.headers, s.config.publicUrl)) },
        };
      },
    }),
    defineRoute<unknown, PageQuery, { slug: string }>({
      method: 'GET',
      path: '/p/:slug',
      scope: 'authenticated',
      auth: 'optional',
      web: 'page',
      summary: 'A page as HTML, first data inline',
      schema: { params: object({ slug: slugParam }), query: object(stateQuery) },
      handler: (ctx) => htmlPage(ctx.params.slug, ctx.principal as Principal | undefined, ctx.query, ctx.headers),
    }),
    defineRoute<unknown, PageQuery, { slug: string; component_id: string }>({
      method: 'GET',
      path: '/p/:slug/c/:component_id',
      scope: 'authenticated',
      auth: 'optional',
      web: 'page',
      summary: 'One card of a page as HTML, for an iframe',
      schema: { params: object({ slug: slugParam, component_id: componentParam }), query: object(stateQuery) },
      handler: (ctx) =>
        htmlPage(
          ctx.params.slug,
          ctx.principal as Principal | undefined,
          ctx.query,
          ctx.headers,
          ctx.params.component_id,
        ),
    }),
    defineRoute<unknown, PageQuery, { slug: string }>({
      method: 'GET',
      path: '/p/:slug/data',
      scope: 'authenticated',
      auth: 'optional',
      web: 'data',
      summary: "A page's cards and their data for a window and width (the page-scoped read path)",
      schema: { params: object({ slug: slugParam }), query: object(dataQuery) },
      handler: async (ctx) => {
        const page = pageForViewer(s, ctx.params.slug, ctx.principal as Principal | undefined);
        const window = viewerWindow(page, ctx.query);
        return {
          data: { window: bootWindow(window), cards: await pageCards(s, page, window, widthOf(ctx.query)) },
          headers: { 'cache-control': 'no-store' },
        };
      },
    }),
    defineRoute<unknown, PageQuery, { slug: string; component_id: string }>({
      method: 'GET',
      path: '/p/:slug/c/:component_id/data',
      scope: 'authenticated',
      auth: 'optional',
      web: 'data',
      summary: 'One card and its data for a window and width',
      schema: { params: object({ slug: slugParam, component_id: componentParam }), query: object(dataQuery) },
      handler: async (ctx) => {
        const page = pageForViewer(s, ctx.params.slug, ctx.principal as Principal | undefined);
        const window = viewerWindow(page, ctx.query);
        return {
          data: {
            window: bootWindow(window),
            cards: await pageCards(s, page, window, widthOf(ctx.query), ctx.params.component_id),
          },
          headers: { 'cache-control': 'no-store' },
        };
      },
    }),
    defineRoute<unknown, unknown, { slug: string }>({
      method: 'GET',
      path: '/p/:slug/events',
      scope: 'authenticated',
      auth: 'optional',
      web: 'data',
      summary: "A page's live refresh: Server-Sent Events `data` (redraw) and `page` (reload)",
      schema: { params: object({ slug: slugParam }) },
      handler: (ctx) => {
        const page = pageForViewer(s, ctx.params.slug, ctx.principal as Principal | undefined);
        return {
          data: null,
          web: {
            kind: 'sse',
            open: (stream) => {
              stream.send('hello', JSON.stringify({ page: page.slug }));
              const off = s.pageEvents.subscribe(page.id, (event) => {
                if (!stream.send(event, JSON.stringify({ at: new Date(s.clock.now()).toISOString() }))) off();
              });
              stream.onClose(off);
            },
          },
        };
      },
    }),
  ];
}
