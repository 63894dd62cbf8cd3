import type { AttentionItem, AttentionProvider } from '../attention/types.js';
import type { MonitorCatalog } from './monitor-catalog.js';

/**
 * Attention items `monitor_firing` (tier `firing`): one per active monitor with a series firing now.
 * `resource_id` is the metric behind it, `resource_name` the monitor's name, `count` the series
 * firing, `since` the earliest start among them, `detail` the monitor id. Paused and disabled
 * monitors are never reported (a paused one was turned off on purpose; a disabled one ended its alerts).
 */
export function monitorAttention(monitors: Pick<MonitorCatalog, 'list' | 'statesOf'>): AttentionProvider {
  return {
    name: 'monitors',
    items(projectId: string): AttentionItem[] {
      const out: AttentionItem[] = [];
      for (const m of monitors.list(projectId)) {
        if (m.status !== 'active') continue;
        const firing = monitors.statesOf(m.id).filter((s) => s.is_firing);
        if (firing.length === 0) continue;
        const since =
          firing
            .map((s) => s.started_firing_at ?? '')
            .filter(Boolean)
            .sort()[0] ?? null;
        out.push({
          type: 'monitor_firing',
          tier: 'firing',
          resource_id: m.metric_id,
          resource_name: m.name,
          count: firing.length,
          since,
          ended_at: null,
          detail: m.id,
        });
      }
      return out;
    },
  };
}
