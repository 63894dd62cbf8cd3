import type { TeamRecord } from '../../accounts/records.js';

/**
 * The team as the API shows it (spec: Team), every field. `storageGb` is measured from the collection
 * files; billing_period_* are 0 and billing_updated_at null until usage is metered.
 */
export function serializeTeam(t: TeamRecord, storageGb: number) {
  return {
    object: 'team',
    id: t.id,
    name: t.name,
    created_at: t.created_at,
    updated_at: t.updated_at,
    deleted_at: t.deleted_at,
    logo_url: t.logo_url,
    status: t.status,
    billing_email: t.billing_email,
    billing_plan: t.billing_plan,
    billing_address: { ...t.billing_address },
    storage_gb: storageGb,
    billing_period_server_months: 0,
    billing_period_input_tokens: 0,
    billing_period_output_tokens: 0,
    billing_period_cache_read_tokens: 0,
    billing_period_cache_write_tokens: 0,
    billing_updated_at: null,
    max_servers_per_project: t.max_servers_per_project,
    is_mfa_required: t.is_mfa_required,
    is_tailglow_ai_enabled: t.is_tailglow_ai_enabled,
    has_payment_method: t.has_payment_method,
    promo_expires_at: t.promo_expires_at,
    server_trial_used_at: t.server_trial_used_at,
    promo_server_hours: t.promo_server_hours,
    promo_ai_tokens: t.promo_ai_tokens,
    tgl_generations_count: t.tgl_generations_count,
    tgl_generations_reset_at: t.tgl_generations_reset_at,
  };
}
