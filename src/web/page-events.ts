import type { PagesRepo } from '../catalog/pages.js';
import type { MetricCatalog } from '../rollup/metric-catalog.js';
import type { RollupReader } from '../rollup/rollup-reader-contract.js';
import type { Logger } from '../log.js';
import type { Scheduler } from '../schedule/types.js';
import type { MonitorCatalog } from '../monitor/monitor-catalog.js';
import { markersVersion } from './markers-version.js';

/** `data`: the page's numbers, alerts or thresholds may have changed (redraw the cards); `page`: its layout or settings did (reload). */
export type PageEvent = 'data' | 'page';

export interface PageEventsDeps {
  pages: PagesRepo;
  metrics: MetricCatalog;
  rollups(): RollupReader | null;
  /** How often watched pages compare their metrics' `complete_through` (config.pageWatchMs). */
  intervalMs: number;
  /** The node's scheduler: the comparison is its `page-watch` job. */
  scheduler: Pick<Scheduler, 'register'>;
  log: Logger;
  /** The monitors: an alert that opens or ends, or a threshold that changes, redraws (markers-version.ts). */
  monitors?: Pick<MonitorCatalog, 'list' | 'store'>;
}

/**
 * Live refresh of open pages (docs/pages.md, "Live refresh"). Viewers subscribe by page; changes
 * made through the API publish at once, and one scheduler job (`page-watch`) checks every watched
 * page's metrics for newly final data (their `complete_through` moved) and publishes `data` — one
 * small event per change, not one per viewer poll. With nobody watching the job does nothing.
 */
export class PageEvents {
  private readonly subscribers = new Map<string, Set<(e: PageEvent) => void>>();
  private readonly seen = new Map<string, string>();
  constructor(private readonly deps: PageEventsDeps) {
    deps.scheduler.register({ name: 'page-watch', schedule: { everyMs: deps.intervalMs }, run: () => this.poll() });
  }

  /** Hear a page's events; returns the unsubscribe function. */
  subscribe(pageId: string, listener: (e: PageEvent) => void): () => void {
    let set = this.subscribers.get(pageId);
    if (!set) {
      set = new Set();
      this.subscribers.set(pageId, set);
      this.seen.set(pageId, this.version(pageId));
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size > 0) return;
      this.subscribers.delete(pageId);
      this.seen.delete(pageId);
    };
  }

  publish(pageId: string, event: PageEvent): void {
    for (const listener of this.subscribers.get(pageId) ?? []) {
      try {
        listener(event);
      } catch (err) {
        this.deps.log.error({ err, page_id: pageId }, 'a page event listener failed');
      }
    }
  }

  /** Number of open subscriptions (tests, metrics). */
  get size(): number {
    let n = 0;
    for (const set of this.subscribers.values()) n += set.size;
    return n;
  }

  stop(): void {
    this.subscribers.clear();
    this.seen.clear();
  }

  /** Check every watched page now (the job's work; tests may call it to skip the wait). */
  poll(): void {
    for (const pageId of [...this.subscribers.keys()]) {
      const v = this.version(pageId);
      if (v === this.seen.get(pageId)) continue;
      this.seen.set(pageId, v);
      this.publish(pageId, 'data');
    }
  }

  /** What a page's cards depend on: each metric's final-data watermark and definition, and its alerts and monitors. */
  private version(pageId: string): string {
    const page = this.deps.pages.byId(pageId);
    if (!page) return 'gone';
    const reader = this.deps.rollups();
    return this.deps.pages
      .componentsOf(pageId)
      .map((c) => {
        const m = this.deps.metrics.get(page.project_id, c.metric_id);
        const markers = m && this.deps.monitors ? markersVersion(this.deps.monitors, m) : '';
        return `${c.metric_id}:${m?.updated_at ?? '-'}:${reader?.completeThrough(c.metric_id) ?? '-'}:${markers}`;
      })
      .join('|');
  }
}
