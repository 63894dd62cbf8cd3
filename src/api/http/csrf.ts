import { ApiError } from '../../errors.js';
import { CSRF_HEADER, csrfToken, sessionFromCookie } from '../../auth/session-cookie.js';
import type { Principal } from './route.js';

/**
 * Cross-site request forgery guard for callers authenticated by the session cookie (docs/pages.md,
 * "Signing in"). A browser attaches the cookie to requests other sites make it send; reads are safe
 * (SameSite=Lax, and answers are not readable cross-origin), so only writes are held: they must
 * carry `X-Sluice-CSRF` with the session's token (which only Sluice's own pages are given), and an
 * `Origin`, when sent, must be this host. Bearer callers are never held: no browser adds that header.
 */
export function checkCsrf(principal: Principal, method: string, headers: Record<string, string>): void {
  if (!principal.viaCookie || method === 'GET' || method === 'HEAD') return;
  const token = sessionFromCookie(headers);
  const sent = headers[CSRF_HEADER];
  if (!token || !sent || sent !== csrfToken(token)) {
    throw new ApiError(
      'csrf_failed',
      `A write authenticated by the session cookie must send the ${CSRF_HEADER} header given to Sluice's pages; API clients send Authorization: Bearer instead`,
    );
  }
  if (!sameOrigin(headers))
    throw new ApiError('csrf_failed', `The request's Origin (${headers.origin}) is not this server`);
}

/** An Origin header, when present, names the host the request was sent to. */
export function sameOrigin(headers: Record<string, string>): boolean {
  const origin = headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === (headers['x-forwarded-host'] ?? headers.host);
  } catch {
    return false;
  }
}
