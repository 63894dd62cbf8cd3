/** Collection slugs: permanent identifiers used in endpoints and ingest URLs (`&collection=<slug>`). */

export const SLUG_MAX = 64;
/** 1 to 64 characters of a-z, 0-9, `_` and `-`, starting with a letter or digit. */
export const SLUG_PATTERN = `^[a-z0-9][a-z0-9_-]{0,${SLUG_MAX - 1}}$`;
const SLUG_RE = new RegExp(SLUG_PATTERN);

/** The slug a collection gets when none is given (ingest creates `default` first). */
export const DEFAULT_COLLECTION_SLUG = 'default';

export function isValidSlug(slug: string): boolean {
  return SLUG_RE.test(slug);
}

/**
 * A slug from a display name: accents folded, lowercase, every run of other characters becomes
 * one `-`, trimmed, at most 64 characters; `collection` when nothing is left.
 */
export function slugFromName(name: string): string {
  const folded = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase();
  const slug = trimDashes(folded.replace(/[^a-z0-9]+/g, '-')).slice(0, SLUG_MAX);
  return trimDashes(slug) || 'collection';
}

/** `base`, else `base-2`, `base-3` … (shortening `base` so the result stays within 64 characters). */
export function uniqueSlug(base: string, taken: (slug: string) => boolean): string {
  if (!taken(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const candidate = trimDashes(base.slice(0, SLUG_MAX - suffix.length)) + suffix;
    if (!taken(candidate)) return candidate;
  }
}

function trimDashes(s: string): string {
  return s.replace(/^[-_]+|[-_]+$/g, '');
}
