import { readFileSync, writeFileSync } from 'node:fs';
import { ENVIRONMENT } from './config.js';

/** Markers around a generated environment table in a Markdown file. */
export const ENV_TABLE_START =
  '<!-- env-table:start (generated from ENVIRONMENT in src/config.ts: npm run docs:env) -->';
export const ENV_TABLE_END = '<!-- env-table:end -->';

/** The Markdown table of every variable in ENVIRONMENT. */
export function envTable(): string {
  const rows = ENVIRONMENT.map((v) => `| \`${v.name}\` | ${v.default} | ${v.meaning} |`);
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n');
}

/** `text` with the table between the markers replaced by the generated one; null when the markers are missing. */
export function withEnvTable(text: string): string | null {
  const start = text.indexOf(ENV_TABLE_START);
  const end = text.indexOf(ENV_TABLE_END);
  if (start < 0 || end < start) return null;
  return `${text.slice(0, start + ENV_TABLE_START.length)}\n${envTable()}\n${text.slice(end)}`;
}

/** Files that carry the table. */
export const ENV_TABLE_FILES = ['README.md', 'docs/self-hosting.md'];

/** Rewrite the tables in place (the `docs:env` script); returns the files changed. */
export function writeEnvTables(root: string): string[] {
  const changed: string[] = [];
  for (const f of ENV_TABLE_FILES) {
    const path = `${root}/${f}`;
    const text = readFileSync(path, 'utf8');
    const next = withEnvTable(text);
    if (next === null) throw new Error(`${f} has no ${ENV_TABLE_START} … ${ENV_TABLE_END} markers`);
    if (next !== text) {
      writeFileSync(path, next);
      changed.push(f);
    }
  }
  return changed;
}
