import type { CollectionRecord } from '../catalog/records.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { SchemaProposal } from '../schema/proposals.js';
import { rulesOf } from '../schema/rules.js';
import type { SchemaService } from '../schema/schema-service.js';

/** The detector looks at a collection at most this often, after batches that brought new shapes. */
export const DETECTOR_INTERVAL_MS = 10_000;

export interface SchemaDetectorDeps {
  collections: {
    /** Apply new identity rules; absent: proposals are only reported. */
    update?(
      sourceId: string,
      id: string,
      patch: (c: CollectionRecord) => Partial<CollectionRecord>,
    ): Promise<CollectionRecord | undefined>;
  };
  schema: Pick<SchemaService, 'report' | 'shapesUnder' | 'rulesChanged'>;
  log: Logger;
  clock: Clock;
}

/**
 * schema_detector auto (docs/catalog.md): after a batch brought new shapes, apply by itself a safe
 * schema proposal — one no mapping reads inside that merges shapes — by adding its path to the
 * opaque paths and its tracked children to the tracked paths (the collection re-keys on next use).
 * manual: proposals wait in the report.
 */
export class SchemaDetector {
  private readonly detectedAt = new Map<string, number>();

  constructor(private readonly d: SchemaDetectorDeps) {}

  /** Look at `c` (at most every DETECTOR_INTERVAL_MS per collection) and apply what is safe. */
  async detect(c: CollectionRecord): Promise<void> {
    if (c.schema_detector !== 'auto' || !this.d.collections.update) return;
    const now = this.d.clock.now();
    const last = this.detectedAt.get(c.id);
    if (last !== undefined && now - last < DETECTOR_INTERVAL_MS) return;
    this.detectedAt.set(c.id, now);
    const report = await this.d.schema.report(c);
    const safe = await this.chooseProposals(
      c,
      report.proposals.filter((p) => !p.read_by_mapping),
      report.shapes.before,
    );
    if (safe.length === 0) return;
    const updated = await this.d.collections.update(c.source_id, c.id, (cur) => ({
      schema_opaque_paths: [...cur.schema_opaque_paths, ...safe.map((p) => p.path)],
      schema_tracked_paths: [...cur.schema_tracked_paths, ...safe.flatMap((p) => p.tracked.map((t) => [...p.path, t]))],
    }));
    if (updated) await this.d.schema.rulesChanged(updated);
    this.d.log.info({ collection_id: c.id, paths: safe.map((p) => p.path) }, 'schema detector applied opaque paths');
  }

  /**
   * The proposals to apply together: all candidates at once must merge shapes (some only help
   * together: two invented-key maps in one record each keep shapes apart alone); then, one after
   * another, each is dropped again if the count without it is no higher — so only proposals that
   * take part in merging are applied.
   */
  private async chooseProposals(
    c: CollectionRecord,
    candidates: SchemaProposal[],
    before: number,
  ): Promise<SchemaProposal[]> {
    if (candidates.length === 0) return [];
    const current = rulesOf(c);
    const count = (ps: SchemaProposal[]) =>
      this.d.schema.shapesUnder(c, {
        ...current,
        opaquePaths: [...current.opaquePaths, ...ps.map((p) => p.path)],
        trackedPaths: [...current.trackedPaths, ...ps.flatMap((p) => p.tracked.map((t) => [...p.path, t]))],
      });
    let chosen = candidates;
    const best = await count(chosen);
    if (best >= before) return [];
    // Least helpful alone first: the first to be found unnecessary.
    for (const p of [...candidates].sort((a, b) => b.shapes_after - a.shapes_after)) {
      if (chosen.length === 1) break;
      const without = chosen.filter((x) => x !== p);
      if ((await count(without)) <= best) chosen = without;
    }
    return chosen;
  }
}
