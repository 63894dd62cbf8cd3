/** Attention items (spec api-1: Attention item; docs/attention.md). Capabilities register providers. */

export const ATTENTION_TYPES = [
  'ingest_refusals',
  'capacity_refusals',
  'monitor_firing',
  'check_down',
  'transform_error',
  'metric_error',
  'join_error',
  'shape_deferral',
  'pull_suspended',
  'drain_suspended',
  'drain_unverified',
  'servers_hot',
] as const;
export type AttentionType = (typeof ATTENTION_TYPES)[number];

/** Most urgent first. */
export const ATTENTION_TIERS = ['losing_data', 'firing', 'stalled', 'suspended', 'resolved'] as const;
export type AttentionTier = (typeof ATTENTION_TIERS)[number];

export interface AttentionItem {
  type: AttentionType;
  tier: AttentionTier;
  resource_id: string | null;
  resource_name: string | null;
  count: number | null;
  since: string | null;
  ended_at: string | null;
  detail: string | null;
}

/** One capability's items for a project, computed from its real state at `now`. */
export interface AttentionProvider {
  name: string;
  items(projectId: string, now: number): AttentionItem[] | Promise<AttentionItem[]>;
}
