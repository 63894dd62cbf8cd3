import { iso, type Clock } from '../clock.js';

/**
 * The `updated_at` of a changed record: now, but always later than the previous value, so two
 * changes within one millisecond (or under a stopped test clock) still differ and an
 * `expected_updated_at` check cannot miss a change.
 */
export function nextUpdatedAt(clock: Clock, previous: string): string {
  return iso(Math.max(clock.now(), Date.parse(previous) + 1));
}

/** Scheduled deletion retention (spec Limits: 7 days for project, source, collection). */
export const DELETION_RETENTION_MS = 7 * 24 * 3600 * 1000;

/**
 * How long a team scheduled for deletion stays restorable before it is removed with everything
 * beneath it (the spec leaves it open; ours is documented in docs/accounts.md).
 */
export const TEAM_DELETION_RETENTION_MS = 30 * 24 * 3600 * 1000;
