import { ApiError, notFound } from '../errors.js';
import { hasScope } from '../auth/scopes.js';
import type { PageRecord } from '../catalog/pages.js';
import type { Principal } from '../api/http/route.js';
import type { Services } from '../services.js';

/**
 * The page at `/p/<address>` — a page id, or the slug whose short address it holds (docs/pages.md,
 * "Slugs and addresses") — and whether this caller may see it (docs/pages.md, "Access"). A public page
 * is open to anyone. A private page needs a signed-in member of its team whose role reads pages
 * (the session cookie; from curl, a session token or key of that team with pages:read): none is 401
 * `sign_in_required` (the page answers its sign-in form), a member of another team 404 like a page
 * that does not exist. A page of a project scheduled for deletion is not served.
 */
export function pageForViewer(s: Services, slug: string, principal: Principal | undefined): PageRecord {
  const page = s.pages.byAddress(slug);
  const project = page ? s.projects.byId(page.project_id) : undefined;
  if (!page || !project || project.deleted_at) throw notFound(`Page ${slug}`);
  if (page.visibility === 'public') return page;
  if (!principal)
    throw new ApiError('sign_in_required', `Page ${slug} is private: sign in with an account of its team`);
  if (!canRead(s, page, principal)) throw notFound(`Page ${slug}`);
  return page;
}

function canRead(s: Services, page: PageRecord, p: Principal): boolean {
  if (p.kind === 'key') return p.teamId === page.team_id && hasScope(p.scopes, 'pages:read');
  // A signed-in user reads the pages of every team they are a member of, whatever team the session acts in.
  if (!p.userId) return false;
  const membership = s.accounts.memberships.get(page.team_id, p.userId);
  if (!membership) return false;
  const role = s.accounts.roles.get(page.team_id, membership.role_id);
  return role !== undefined && hasScope(role.scopes, 'pages:read');
}
