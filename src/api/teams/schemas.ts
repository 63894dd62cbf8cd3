import {
  BILLING_PLANS,
  TEAM_STATUSES,
  type Address,
  type BillingPlan,
  type TeamStatus,
} from '../../accounts/records.js';
import { invalidField } from '../../errors.js';
import type { JsonSchema } from '../http/route.js';
import { integer, isoDateString, object, text } from '../http/schemas.js';
import { MAX_LOGO_URI_LENGTH } from './logo.js';

/**
 * The service operator's own email domain: a team's billing email may not use it (spec: Create
 * rules). Fixed rather than configured; subdomains count too.
 */
export const OPERATOR_EMAIL_DOMAIN = 'sluice.dev';
/** Spec: "a per-user maximum number of created teams exists"; ours is 20 (live or scheduled). */
export const MAX_TEAMS_CREATED_PER_USER = 20;
/** Team create/update bodies carry a logo of up to 5 MB as base64 (≈6.7 MiB): allow 8 MiB. */
export const TEAM_BODY_LIMIT_BYTES = 8 * 1024 * 1024;

const nullableText = (max: number): JsonSchema => ({
  type: ['string', 'null'],
  maxLength: max,
  errorHint: `must be a string of at most ${max} characters, or null`,
});

/** Address; every field optional on input (string or null), unknown fields refused. */
export const addressSchema = object({
  thoroughfare: nullableText(200),
  premise: nullableText(200),
  sublocality: nullableText(200),
  locality: nullableText(200),
  administrative_area: nullableText(200),
  postal_code: nullableText(32),
  country: {
    type: ['string', 'null'],
    pattern: '^[A-Z]{2}$',
    errorHint: 'must be a two-letter ISO 3166-1 country code in capitals (e.g. DE), or null',
  },
});

const billingEmail: JsonSchema = {
  type: 'string',
  format: 'email',
  maxLength: 64,
  errorHint: 'must be an email address of at most 64 characters',
};
const logoUrl: JsonSchema = {
  type: 'string',
  maxLength: MAX_LOGO_URI_LENGTH,
  errorHint: 'must be a PNG or JPEG base64 data URI of at most 5 MB',
};
const status: JsonSchema = { enum: [...TEAM_STATUSES] };
const billingPlan: JsonSchema = { enum: [...BILLING_PLANS] };

export interface TeamCreateBody {
  name?: string;
  billing_email?: string;
  billing_plan?: BillingPlan;
  status?: TeamStatus;
  is_mfa_required?: boolean;
  max_servers_per_project?: number;
  billing_address?: Partial<Address>;
  logo_url?: string;
}

export interface TeamUpdateBody extends Omit<TeamCreateBody, 'logo_url'> {
  logo_url?: string | null;
  expected_status?: TeamStatus;
  is_tailglow_ai_enabled?: boolean;
  deleted_at?: string | null;
}

export const createBody = object({
  name: text(2, 60),
  billing_email: billingEmail,
  billing_plan: billingPlan,
  status,
  is_mfa_required: { type: 'boolean' },
  max_servers_per_project: integer(1, 1000),
  billing_address: addressSchema,
  logo_url: logoUrl,
});

export const updateBody = object({
  name: text(2, 60),
  billing_email: billingEmail,
  billing_plan: billingPlan,
  status,
  expected_status: status,
  is_mfa_required: { type: 'boolean' },
  is_tailglow_ai_enabled: { type: 'boolean' },
  max_servers_per_project: integer(1, 1000),
  billing_address: addressSchema,
  logo_url: {
    ...logoUrl,
    type: ['string', 'null'],
    errorHint: 'must be a PNG or JPEG base64 data URI of at most 5 MB, or null for the generated logo',
  },
  deleted_at: { anyOf: [isoDateString, { type: 'null' }], errorHint: 'must be an ISO 8601 date-time or null' },
});

/** Spec: billing_email cannot use the operator's own email domain. */
export function assertBillingEmailAllowed(field: string, email: string): void {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  if (domain === OPERATOR_EMAIL_DOMAIN || domain.endsWith('.' + OPERATOR_EMAIL_DOMAIN)) {
    throw invalidField(
      field,
      `cannot use the service operator's own email domain (${OPERATOR_EMAIL_DOMAIN}); use an address of your organisation`,
    );
  }
}
