import type { Database } from 'lmdb';
import { iso, type Clock } from '../clock.js';
import type { Store } from '../store/db.js';

/** How stale a persisted activity time may be: writes happen at most this often per subject. */
const RESOLUTION_MS = 60_000;

/**
 * Last-activity times (project `last_activity_at`, ingest key `last_used_at`) kept in memory and
 * persisted at most once a minute per subject, so ingest never pays a write per request.
 */
export class ActivityTracker {
  private readonly db: Database<number, string>;
  private readonly latest = new Map<string, number>();
  private readonly persisted = new Map<string, number>();

  constructor(
    store: Store,
    private readonly clock: Clock,
  ) {
    this.db = store.db<number, string>('activity');
  }

  /** Note activity of `subject` (a project or ingest key id) now. */
  touch(subject: string, at: number = this.clock.now()): void {
    this.latest.set(subject, at);
    const stored = this.persisted.get(subject) ?? this.db.get(subject) ?? 0;
    if (at - stored >= RESOLUTION_MS) {
      this.persisted.set(subject, at);
      void this.db.put(subject, at);
    }
  }

  /** ISO time of the last activity, or null when there was none. */
  lastActivityAt(subject: string): string | null {
    const at = this.latest.get(subject) ?? this.db.get(subject);
    return at === undefined ? null : iso(at);
  }

  /** Persist everything newer than what is stored (on shutdown). */
  async flush(): Promise<void> {
    const writes: Promise<boolean>[] = [];
    for (const [subject, at] of this.latest) {
      if ((this.persisted.get(subject) ?? 0) < at) {
        this.persisted.set(subject, at);
        writes.push(this.db.put(subject, at));
      }
    }
    await Promise.all(writes);
  }

  forget(subject: string): Promise<boolean> {
    this.latest.delete(subject);
    this.persisted.delete(subject);
    return this.db.remove(subject);
  }
}
