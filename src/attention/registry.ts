import type { Logger } from '../log.js';
import { ATTENTION_TIERS, type AttentionItem, type AttentionProvider } from './types.js';

/**
 * The one registration point of attention providers (docs/attention.md). Each capability registers a
 * provider once at start (`register`); `itemsFor` asks every provider and returns their items most
 * urgent tier first. A provider that throws is logged and left out, so one broken capability never
 * hides the others' items.
 */
export class AttentionRegistry {
  private readonly providers = new Map<string, AttentionProvider>();

  constructor(private readonly log?: Logger) {}

  /** Add a provider; a second provider under the same name replaces the first. */
  register(provider: AttentionProvider): void {
    this.providers.set(provider.name, provider);
  }

  /** The names registered, in registration order. */
  names(): string[] {
    return [...this.providers.keys()];
  }

  /** Every provider's items for `projectId` at `now`: by tier (most urgent first), then `since` (oldest first), then type. */
  async itemsFor(projectId: string, now: number): Promise<AttentionItem[]> {
    const out: AttentionItem[] = [];
    for (const p of this.providers.values()) {
      try {
        out.push(...(await p.items(projectId, now)));
      } catch (err) {
        this.log?.error({ err, provider: p.name, project_id: projectId }, 'an attention provider failed');
      }
    }
    const tier = (i: AttentionItem) => ATTENTION_TIERS.indexOf(i.tier);
    return out.sort(
      (a, b) =>
        tier(a) - tier(b) ||
        (a.since ?? '').localeCompare(b.since ?? '') ||
        a.type.localeCompare(b.type) ||
        (a.resource_id ?? '').localeCompare(b.resource_id ?? ''),
    );
  }
}
