import { ApiError, invalidField } from '../../errors.js';
import { assertRestoreFirst } from '../http/scheduled-deletion.js';
import { generatedLogo } from '../../accounts/repo.js';
import type { TeamAccess } from '../../accounts/access.js';
import { assertValidLogo } from './logo.js';
import { assertBillingEmailAllowed, type TeamUpdateBody } from './schemas.js';
import type { Address, TeamRecord } from '../../accounts/records.js';

/** A validated team update: the fields to change (billing_address merged field by field). */
export type TeamChange = Partial<Omit<TeamRecord, 'billing_address'>> & { billing_address?: Partial<Address> };

/** Spec: members other than Owners may change only these. */
const MEMBER_FIELDS = new Set(['name', 'logo_url']);
/** Spec 8: a restricted team is read-only apart from the billing fields needed to recover. */
const RESTRICTED_FIELDS = new Set(['billing_email', 'billing_address', 'billing_plan']);

/**
 * The rules of a team update (spec: Teams › Update rules), in this order:
 * at least one field (400) → status and expected_status together (400) → scheduled for deletion:
 * restore first (409) → restricted team: billing fields only (403 team_restricted) → non-Owners:
 * name and logo_url only (403 owner_required) →
 * stale expected_status (409) → service-managed values (403 managed_by_service) → MFA setting
 * (403 mfa_recent_required) → plan change without payment method (402) → email domain and logo (400).
 * Sending a managed or MFA field with its current value is accepted as a no-op.
 */
export function validateTeamUpdate(access: TeamAccess, b: TeamUpdateBody): TeamChange {
  const { team } = access;
  const fields = Object.keys(b);
  if (fields.length === 0) throw invalidField('body', 'must contain at least one field to change');
  if ((b.status === undefined) !== (b.expected_status === undefined)) {
    const missing = b.status === undefined ? 'status' : 'expected_status';
    throw invalidField(
      `body.${missing}`,
      'is required together with ' + (missing === 'status' ? 'expected_status' : 'status'),
    );
  }
  // Like projects: a team scheduled for deletion is restored first, then changed.
  assertRestoreFirst('team', team, b);
  if (team.status === 'restricted') {
    const blocked = fields.filter((f) => !RESTRICTED_FIELDS.has(f));
    if (blocked.length)
      throw new ApiError(
        'team_restricted',
        `The team is restricted: only ${[...RESTRICTED_FIELDS].join(', ')} can change; remove ${blocked.join(', ')}`,
      );
  }
  if (!access.isOwner) {
    const ownerOnly = fields.filter((f) => !MEMBER_FIELDS.has(f));
    if (ownerOnly.length)
      throw new ApiError(
        'owner_required',
        `Only team Owners may change ${ownerOnly.join(', ')}; members may change name and logo_url`,
      );
  }
  if (b.expected_status !== undefined && b.expected_status !== team.status) {
    throw new ApiError('conflict', `The team status is ${team.status}, not ${b.expected_status}; reload and retry`);
  }
  if (b.status !== undefined && b.status !== team.status) {
    throw new ApiError(
      'managed_by_service',
      'status is managed by the service (billing and the operator); it cannot be set through the API',
    );
  }
  if (b.max_servers_per_project !== undefined && b.max_servers_per_project !== team.max_servers_per_project) {
    throw new ApiError(
      'managed_by_service',
      'max_servers_per_project is managed by the service per plan; it cannot be set through the API',
    );
  }
  if (b.deleted_at !== undefined && b.deleted_at !== null) {
    throw new ApiError(
      'managed_by_service',
      `deleted_at is set by the service; schedule deletion with DELETE /v1/teams/${team.id}, or send null to cancel it`,
    );
  }
  if (b.is_mfa_required !== undefined && b.is_mfa_required !== team.is_mfa_required) {
    throw new ApiError(
      'mfa_recent_required',
      'Changing is_mfa_required needs a recently verified multi-factor sign-in, and this server does not offer multi-factor sign-in yet',
    );
  }
  if (b.billing_plan !== undefined && b.billing_plan !== team.billing_plan && !team.has_payment_method) {
    throw new ApiError(
      'payment_method_required',
      `Moving to ${b.billing_plan} needs a valid payment method on the team`,
    );
  }
  if (b.billing_email !== undefined) assertBillingEmailAllowed('body.billing_email', b.billing_email);
  if (typeof b.logo_url === 'string') assertValidLogo('body.logo_url', b.logo_url);

  const change: TeamChange = {};
  if (b.name !== undefined) change.name = b.name;
  if (b.logo_url !== undefined) change.logo_url = b.logo_url ?? generatedLogo(b.name ?? team.name);
  if (b.billing_email !== undefined) change.billing_email = b.billing_email;
  if (b.billing_plan !== undefined) change.billing_plan = b.billing_plan;
  if (b.billing_address !== undefined) change.billing_address = b.billing_address;
  if (b.is_tailglow_ai_enabled !== undefined) change.is_tailglow_ai_enabled = b.is_tailglow_ai_enabled;
  if (b.deleted_at === null) change.deleted_at = null;
  return change;
}
