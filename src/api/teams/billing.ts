import { iso } from '../../clock.js';
import type { BillingPlan, TeamRecord } from '../../accounts/records.js';

/** Line item types of a billing estimate, in invoice order (spec: Billing line item). */
export const LINE_ITEM_TYPES = [
  'compute',
  'storage',
  'subscription',
  'ai_input',
  'ai_output',
  'ai_cache_read',
  'ai_cache_write',
] as const;
type LineItemType = (typeof LINE_ITEM_TYPES)[number];

/**
 * List prices in cents per unit (server-month, GB-month, month, million tokens). A self-hosted
 * node meters nothing yet, so every quantity is 0; the prices only label the invoice lines.
 */
const UNIT_PRICE_CENTS: Record<LineItemType, number> = {
  compute: 0,
  storage: 0,
  subscription: 0,
  ai_input: 0,
  ai_output: 0,
  ai_cache_read: 0,
  ai_cache_write: 0,
};

const DESCRIPTIONS: Record<LineItemType, string> = {
  compute: 'Servers (server-months)',
  storage: 'Storage (GB-months)',
  subscription: 'Plan subscription',
  ai_input: 'AI input tokens (millions)',
  ai_output: 'AI output tokens (millions)',
  ai_cache_read: 'AI cache read tokens (millions)',
  ai_cache_write: 'AI cache write tokens (millions)',
};

/** Storage included with each plan per month, GB-months. */
const INCLUDED_STORAGE_GB_MONTHS: Record<BillingPlan, number> = { pro_v1: 0, enterprise_v1: 0 };

function zeroLines(plan: BillingPlan) {
  return LINE_ITEM_TYPES.map((type) => ({
    object: 'billing_line_item',
    line_item_type: type,
    description: type === 'subscription' ? `Plan subscription (${plan})` : DESCRIPTIONS[type],
    quantity: 0,
    unit_price_cents: UNIT_PRICE_CENTS[type],
    subtotal_cents: 0,
    discount_cents: 0,
    total_cents: 0,
    discount_id: null,
    discount_percent: null,
  }));
}

/**
 * Team billing (spec: Team billing) for the current UTC calendar month. Reading it consumes nothing
 * and creates no invoice; money is in cents.
 */
export function billingSummary(team: TeamRecord, nowMs: number, serverCount: number) {
  const now = new Date(nowMs);
  const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  const included = INCLUDED_STORAGE_GB_MONTHS[team.billing_plan];
  return {
    object: 'billing',
    is_estimate_complete: true,
    team_id: team.id,
    calculated_at: iso(nowMs),
    billing_plan: team.billing_plan,
    has_payment_method: team.has_payment_method,
    promo_expires_at: team.promo_expires_at,
    server_count: serverCount,
    uninvoiced_server_hours: 0,
    promo_server_hours: team.promo_server_hours,
    promo_ai_tokens: team.promo_ai_tokens,
    available_promo_server_hours: team.promo_server_hours,
    available_promo_ai_tokens: team.promo_ai_tokens,
    included_storage_gb_months: included,
    available_included_storage_gb_months: included,
    period_start_at: iso(start),
    period_end_at: iso(end),
    // The invoice is calculated when the period closes.
    billed_at: iso(end),
    line_items: zeroLines(team.billing_plan),
    subtotal_cents: 0,
    discount_cents: 0,
    total_cents: 0,
    projected_line_items: zeroLines(team.billing_plan),
    projected_subtotal_cents: 0,
    projected_discount_cents: 0,
    projected_total_cents: 0,
  };
}
