import type { Scopes } from '../auth/scopes.js';

export const TEAM_STATUSES = ['active', 'delinquent', 'restricted', 'blocked'] as const;
export type TeamStatus = (typeof TEAM_STATUSES)[number];
export const BILLING_PLANS = ['pro_v1', 'enterprise_v1'] as const;
export type BillingPlan = (typeof BILLING_PLANS)[number];

export interface Address {
  thoroughfare: string | null;
  premise: string | null;
  sublocality: string | null;
  locality: string | null;
  administrative_area: string | null;
  postal_code: string | null;
  country: string | null;
}

/** A team as stored. Derived fields (storage_gb, billing_period_*) are computed when serialised. */
export interface TeamRecord {
  id: string;
  name: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  logo_url: string | null;
  status: TeamStatus;
  billing_email: string;
  billing_plan: BillingPlan;
  billing_address: Address;
  max_servers_per_project: number;
  is_mfa_required: boolean;
  is_tailglow_ai_enabled: boolean;
  has_payment_method: boolean;
  promo_expires_at: string | null;
  server_trial_used_at: string | null;
  promo_server_hours: number;
  promo_ai_tokens: number;
  tgl_generations_count: number;
  tgl_generations_reset_at: string | null;
  created_by: string | null;
}

export interface UserRecord {
  id: string;
  email: string;
  name: string | null;
  /** scrypt hash, or null for an invited user who has not set a password yet. */
  password_hash: string | null;
  created_at: string;
  updated_at: string;
}

/** A user's place in a team. Stored under scope = team id, id = user id. */
export interface MembershipRecord {
  id: string;
  team_id: string;
  user_id: string;
  role_id: string;
  created_at: string;
  updated_at: string;
}

/** Built-in roles every team has; `owner` controls billing, security and account settings. */
export const BUILTIN_ROLES = ['owner', 'member'] as const;
export type BuiltinRole = (typeof BUILTIN_ROLES)[number];

export interface RoleRecord {
  id: string;
  team_id: string;
  name: string;
  description: string | null;
  scopes: Scopes;
  builtin: BuiltinRole | null;
  created_at: string;
  updated_at: string;
}

export interface ApiKeyRecord {
  id: string;
  team_id: string;
  name: string;
  scopes: Scopes;
  secret_hash: string;
  last4: string;
  created_at: string;
  updated_at: string;
  updated_by: string | null;
  last_used_at: string | null;
}

export interface SessionRecord {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
}
