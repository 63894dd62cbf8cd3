/**
 * Reading a bench's knobs from the environment. A value that does not parse is an `OptionError`
 * naming the variable and what it takes: a typo must not fall back to a default and measure
 * something else. Each bench keeps its own table of knobs (name → meaning, for the message).
 */
export class OptionError extends Error {}

/** An integer knob in [min, max] (`_` allowed as a digit separator), or `fallback` when unset. */
export function integerKnob(
  knobs: Readonly<Record<string, string>>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw.replaceAll('_', ''));
  if (!Number.isSafeInteger(v) || v < min || v > max)
    throw new OptionError(`${name}="${raw}": must be an integer from ${min} to ${max} — ${knobs[name]}`);
  return v;
}

/** A number knob in [min, max], or `fallback` when unset. */
export function numberKnob(
  knobs: Readonly<Record<string, string>>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min || v > max)
    throw new OptionError(`${name}="${raw}": must be a number from ${min} to ${max} — ${knobs[name]}`);
  return v;
}

/** A comma-separated list knob; `parse` returns undefined for a part it refuses. */
export function listKnob<T>(
  knobs: Readonly<Record<string, string>>,
  name: string,
  fallback: T[],
  parse: (s: string) => T | undefined,
): T[] {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const out: T[] = [];
  for (const part of raw.split(',').map((s) => s.trim())) {
    const v = parse(part);
    if (v === undefined) throw new OptionError(`${name}="${raw}": "${part}" is not accepted — ${knobs[name]}`);
    out.push(v);
  }
  return out;
}

/** A 0/1 knob. */
export function flagKnob(knobs: Readonly<Record<string, string>>, name: string): boolean {
  const raw = process.env[name] ?? '0';
  if (raw !== '0' && raw !== '1') throw new OptionError(`${name}="${raw}": must be 0 or 1 — ${knobs[name]}`);
  return raw === '1';
}

/** Print `err` (an OptionError) with the knob table and exit 2; anything else is rethrown. */
export function refuseOptions(bench: string, knobs: Readonly<Record<string, string>>, err: unknown): never {
  if (!(err instanceof OptionError)) throw err;
  process.stderr.write(
    `${bench}: ${err.message}\nKnobs:\n${Object.entries(knobs)
      .map(([k, v]) => `  ${k}: ${v}`)
      .join('\n')}\n`,
  );
  process.exit(2);
}
