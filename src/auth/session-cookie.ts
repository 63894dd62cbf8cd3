import { createHash } from 'node:crypto';

/**
 * The browser's session cookie (docs/pages.md, "Signing in"): the session token of POST
 * /v1/sessions, kept where page scripts cannot read it (HttpOnly), sent only by same-site
 * navigations and requests (SameSite=Lax), and only over TLS when Sluice is served behind it.
 */
export const SESSION_COOKIE = 'sluice_session';

/** The request header a cookie-authenticated write must carry (its value: `csrfToken`). */
export const CSRF_HEADER = 'x-sluice-csrf';

/** Cookies of a `Cookie` header; the first of a repeated name wins. */
export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (out.has(name)) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    out.set(name, value);
  }
  return out;
}

/** The session token carried by the request's cookie, or undefined. */
export function sessionFromCookie(headers: Record<string, string>): string | undefined {
  const token = parseCookies(headers.cookie).get(SESSION_COOKIE);
  return token && /^[\x21-\x7e]{1,512}$/.test(token) ? token : undefined;
}

/**
 * The anti-CSRF token of a session: derived from its secret token, so a page of another site (which
 * can make the browser send the cookie but cannot read it) cannot compute it. Sluice's own pages
 * receive it in their HTML and send it back in `X-Sluice-CSRF` on writes.
 */
export function csrfToken(sessionToken: string): string {
  return createHash('sha256').update(`csrf\u0000${sessionToken}`).digest('base64url');
}

/** Whether the request reached Sluice over TLS (directly or through a proxy saying so), or the public URL is https. */
export function isSecureRequest(headers: Record<string, string>, publicUrl: string): boolean {
  return headers['x-forwarded-proto']?.split(',')[0]?.trim() === 'https' || publicUrl.startsWith('https:');
}

/** `Set-Cookie` value that stores `token` until `expiresAt` (epoch ms). */
export function sessionCookie(token: string, expiresAt: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; Path=/; Expires=${new Date(expiresAt).toUTCString()}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** `Set-Cookie` value that removes the session cookie. */
export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}
