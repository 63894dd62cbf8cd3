/** How commands print: aligned tables for people, JSON or CSV for scripts (docs/cli.md, "Output"). */

export type Cell = string | number | boolean | null | undefined;

/** A value as one table cell: objects as compact JSON, null as an empty cell. */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Columns padded to their widest cell, a header line first. */
export function formatTable(columns: string[], rows: Cell[][]): string {
  const text = rows.map((r) => r.map(cellText));
  const widths = columns.map((c, i) => Math.max(c.length, ...text.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(columns.map((c) => c.toUpperCase())), ...text.map(line)].join('\n') + '\n';
}

/** RFC 4180 CSV: fields with a comma, quote or line break are quoted, quotes doubled. */
export function formatCsv(columns: string[], rows: Cell[][]): string {
  const field = (v: unknown) => {
    const s = cellText(v);
    return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  return [columns.map(field).join(','), ...rows.map((r) => r.map(field).join(','))].join('\n') + '\n';
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** One object as `key  value` lines. */
export function formatRecord(obj: Record<string, unknown>): string {
  const keys = Object.keys(obj);
  const width = Math.max(0, ...keys.map((k) => k.length));
  return keys.map((k) => `${k.padEnd(width)}  ${cellText(obj[k])}`).join('\n') + '\n';
}
