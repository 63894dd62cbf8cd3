import type { CollectionRecord } from '../catalog/records.js';
import type { SchemaBook } from './book.js';
import { countShapesUnder } from './rekey.js';
import { buildReport, type SchemaReport } from './report.js';
import { rulesKey, rulesOf, type FingerprintRules } from './rules.js';

/** Reports (distinct rule sets: the current ones and previews) cached per collection. */
const REPORTS_CACHED = 4;

/**
 * What the schema detector reads of a collection's book: its report (shapes, proposals) under the
 * current rules or a preview's, and how many shapes the stored ones collapse to under other rules
 * (the runner's `schema_detector auto`, GET schema_report, POST schema_preview). Nothing changes.
 * Both are cached per (book generation, revision, rules): computed once per change of the book,
 * not per request or per detector run.
 */
export class SchemaDetector {
  private readonly cache = new Map<
    string,
    { stamp: string; reports: Map<string, SchemaReport>; counts: Map<string, number> }
  >();

  /**
   * The report of `c` from its current `book`, under `rules` (absent: the collection's). The cost
   * (bounded by the recorded shapes, see book.ts UNCLASSIFIED_SHAPE_CAP) is paid once per change
   * of the collection's shapes.
   */
  report(c: CollectionRecord, book: SchemaBook, rules?: FingerprintRules): SchemaReport {
    const current = rulesOf(c);
    const cache = this.cacheFor(c.id, book);
    const key = rulesKey(rules ?? current);
    let report = cache.reports.get(key);
    if (!report) {
      report = buildReport({
        collectionId: c.id,
        current,
        rules: rules ?? current,
        shapes: [...book.shapes.values()],
        overflow: book.overflow,
      });
      if (cache.reports.size >= REPORTS_CACHED) cache.reports.delete(cache.reports.keys().next().value!);
      cache.reports.set(key, report);
    }
    return report;
  }

  /** Distinct shapes the stored shapes of `book` collapse to under `rules` (cached like reports). */
  shapesUnder(collectionId: string, book: SchemaBook, rules: FingerprintRules): number {
    const cache = this.cacheFor(collectionId, book);
    const key = rulesKey(rules);
    let n = cache.counts.get(key);
    if (n === undefined) {
      n = countShapesUnder(rules, book.shapes.values());
      if (cache.counts.size >= REPORTS_CACHED * 4) cache.counts.delete(cache.counts.keys().next().value!);
      cache.counts.set(key, n);
    }
    return n;
  }

  /** Drop what is cached for a collection (its book was let go, or the collection destroyed). */
  forget(collectionId: string): void {
    this.cache.delete(collectionId);
  }

  /** The collection's cache, emptied when the book changed since it was filled. */
  private cacheFor(
    collectionId: string,
    book: SchemaBook,
  ): { reports: Map<string, SchemaReport>; counts: Map<string, number> } {
    const stamp = `${book.generation}:${book.revision}`;
    let cache = this.cache.get(collectionId);
    if (!cache || cache.stamp !== stamp)
      this.cache.set(collectionId, (cache = { stamp, reports: new Map(), counts: new Map() }));
    return cache;
  }
}
