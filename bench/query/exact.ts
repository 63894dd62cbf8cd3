/**
 * The exact answers: DuckDB (in the bench process) scanning the view's Parquet files, as a raw
 * query would. Buckets are UTC (integer division of epoch ms); percentiles use the sketches' rank
 * rule x[⌊q(n−1)⌋] (DuckDB's quantile_disc takes another order statistic).
 */
import { DuckDBInstance, listValue, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { OTHER, type Cell } from './aggregation.js';
import type { GeneratedFile } from './view-files.js';

export interface ExactQuery {
  /** [from, to) epoch ms, bucket-aligned. */
  from: number;
  to: number;
  widthMs: number;
  /** The group_by field. */
  field: string;
  /** Groups kept as themselves; the others fold into `__other__`. null: every group is kept. */
  kept: readonly string[] | null;
  values: readonly string[];
  valueField: string;
  uniqueField: string;
}

const QUANTILES: Record<string, number> = { p50: 0.5, p95: 0.95, p99: 0.99 };

/** A safe SQL identifier for the bench's own field names (never user input, checked anyway). */
function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`exact: unexpected field name "${name}"`);
  return `"${name}"`;
}

function valueSql(v: string, q: ExactQuery): string {
  const x = ident(q.valueField);
  if (v in QUANTILES) return `list_sort(list(${x}))[floor(${QUANTILES[v]} * (count(${x}) - 1))::BIGINT + 1]`;
  switch (v) {
    case 'count':
      return 'count(*)::DOUBLE';
    case 'sum':
      return `sum(${x})`;
    case 'average':
      return `avg(${x})`;
    case 'min':
      return `min(${x})`;
    case 'max':
      return `max(${x})`;
    case 'count_unique':
      return `count(DISTINCT ${ident(q.uniqueField)})::DOUBLE`;
    default:
      throw new Error(`exact: no exact form for "${v}"`);
  }
}

export class ExactScanner {
  private constructor(
    private readonly db: DuckDBInstance,
    private readonly conn: DuckDBConnection,
  ) {}

  static async open(): Promise<ExactScanner> {
    const db = await DuckDBInstance.create(':memory:');
    return new ExactScanner(db, await db.connect());
  }

  /** The cells of `q` over `files` (only those whose time range meets [from, to) are read). */
  async cells(files: readonly GeneratedFile[], q: ExactQuery): Promise<Cell[]> {
    const paths = files.filter((f) => f.maxTs >= q.from && f.minTs < q.to).map((f) => f.path);
    if (paths.length === 0) return [];
    const params: DuckDBValue[] = [listValue(paths), q.from, q.to, q.widthMs];
    const field = ident(q.field);
    let group = `${field}::VARCHAR`;
    if (q.kept !== null) {
      params.push(listValue([...q.kept]));
      group = `CASE WHEN list_contains($5, ${field}::VARCHAR) THEN ${field}::VARCHAR ELSE '${OTHER}' END`;
    }
    const sql =
      `SELECT ${group} AS g, (epoch_ms(__ts) // $4) * $4 AS b, ${q.values.map((v, i) => `${valueSql(v, q)} AS v${i}`).join(', ')} ` +
      `FROM read_parquet($1) WHERE epoch_ms(__ts) >= $2 AND epoch_ms(__ts) < $3 GROUP BY ALL`;
    const reader = await this.conn.runAndReadAll(sql, params);
    return reader.getRows().map((r) => ({
      group: String(r[0]),
      bucket: Number(r[1]),
      values: r.slice(2).map((v) => (v === null ? null : Number(v))),
    }));
  }

  /** The distinct values of `q.uniqueField` in one cell of `q` (its group, or `__other__`, and bucket). */
  async distinctIds(files: readonly GeneratedFile[], q: ExactQuery, group: string, bucket: number): Promise<string[]> {
    const paths = files.filter((f) => f.maxTs >= bucket && f.minTs < bucket + q.widthMs).map((f) => f.path);
    if (paths.length === 0) return [];
    const field = ident(q.field);
    const inGroup = group === OTHER ? `NOT list_contains($4, ${field}::VARCHAR)` : `${field}::VARCHAR = $4`;
    const sql = `SELECT DISTINCT ${ident(q.uniqueField)}::VARCHAR FROM read_parquet($1) WHERE epoch_ms(__ts) >= $2 AND epoch_ms(__ts) < $3 AND ${inGroup}`;
    const r = await this.conn.runAndReadAll(sql, [
      listValue(paths),
      bucket,
      bucket + q.widthMs,
      group === OTHER ? listValue([...(q.kept ?? [])]) : group,
    ]);
    return (r.getColumns()[0] ?? []).map(String);
  }

  close(): void {
    this.conn.closeSync();
    this.db.closeSync();
  }
}
