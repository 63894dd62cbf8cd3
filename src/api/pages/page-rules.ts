import type { FieldIssue } from '../../errors.js';
import type { PageRecord } from '../../catalog/pages.js';
import { isTimeZone } from '../../rollup/aggregation/zoned-time.js';
import { assertValid } from '../../http/validation.js';
import type { PageBody } from './schemas.js';

/** A slug made from a page name: lowercase ASCII words joined by hyphens (`page` when none is left). */
export function slugOf(name: string): string {
  const words = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim()
    .split(' ')
    .filter(Boolean);
  let out = '';
  for (const w of words) {
    const next = out ? `${out}-${w}` : w;
    if (next.length > 56) break;
    out = next;
  }
  return out || 'page';
}

/**
 * The rules across fields of a page as it would be after `body` (docs/pages.md, "Rules"): an IANA
 * zone; a custom range given with both ends, start before end; `time_range: custom` only with a
 * saved custom range. Every problem is reported at once, naming the field.
 */
export function checkPage(
  next: Pick<PageRecord, 'time_range' | 'custom_range_start_at' | 'custom_range_end_at' | 'timezone'>,
  body: PageBody,
): void {
  const issues: FieldIssue[] = [];
  if (body.timezone !== undefined && !isTimeZone(body.timezone)) {
    issues.push({
      field: 'body.timezone',
      message: `has ${JSON.stringify(body.timezone.slice(0, 64))}, which is not an IANA time zone name; use e.g. Europe/Berlin or UTC`,
    });
  }
  const start = next.custom_range_start_at;
  const end = next.custom_range_end_at;
  if ((start === null) !== (end === null)) {
    const missing = start === null ? 'custom_range_start_at' : 'custom_range_end_at';
    issues.push({
      field: `body.${missing}`,
      message: 'must be set together with the other end of the custom range (or both null)',
    });
  } else if (start !== null && end !== null && Date.parse(end) <= Date.parse(start)) {
    issues.push({ field: 'body.custom_range_end_at', message: `must be after custom_range_start_at (${start})` });
  }
  if (next.time_range === 'custom' && (start === null || end === null)) {
    issues.push({
      field: 'body.time_range',
      message: 'is custom, which needs custom_range_start_at and custom_range_end_at',
    });
  }
  assertValid(issues);
}
