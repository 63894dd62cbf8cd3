import { readFileSync } from 'node:fs';
import { usageError } from './errors.js';

/** Collect a repeatable option into a list (commander's option processor). */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** A `--set` value: JSON when it parses (numbers, booleans, null, arrays, objects), else the text itself. */
export function fieldValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * A request body from `--file <path|->` (a JSON object) and `--set field=value` pairs, applied after
 * the file; `a.b=1` sets a nested field. Options named in `extra` (e.g. --name) come last.
 */
export function buildBody(
  opts: { file?: string; set?: string[] },
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  let body: Record<string, unknown> = {};
  if (opts.file !== undefined) {
    let text: string;
    try {
      text = readFileSync(opts.file === '-' ? 0 : opts.file, 'utf8');
    } catch (err) {
      throw usageError(`--file ${opts.file}: ${(err as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw usageError(`--file ${opts.file} is not valid JSON: ${(err as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw usageError(`--file ${opts.file} must hold one JSON object (the request body)`);
    body = parsed as Record<string, unknown>;
  }
  for (const pair of opts.set ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw usageError(`--set takes field=value, got "${pair}"`);
    const path = pair.slice(0, eq).split('.');
    let target = body;
    for (const part of path.slice(0, -1)) {
      const next = target[part];
      target = (target[part] = typeof next === 'object' && next !== null && !Array.isArray(next) ? next : {}) as Record<
        string,
        unknown
      >;
    }
    target[path[path.length - 1]!] = fieldValue(pair.slice(eq + 1));
  }
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) body[k] = v;
  return body;
}
