import { FormatError } from './format-error.js';
import type { DiscoveredTarget } from '../records.js';

/** Spec limit: at most 50 discovered targets per run; more fails the fetch. */
export const MAX_DISCOVERED_TARGETS = 50;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Whether a parsed JSON document is a Prometheus HTTP service-discovery document: a non-empty array
 * of objects with a `targets` array and at most a `labels` object besides.
 */
export function looksLikeSd(doc: unknown): doc is unknown[] {
  return (
    Array.isArray(doc) &&
    doc.length > 0 &&
    doc.every(
      (g) => isObject(g) && Array.isArray(g.targets) && Object.keys(g).every((k) => k === 'targets' || k === 'labels'),
    )
  );
}

/**
 * The targets of a service-discovery document, each with its group's labels, in document order.
 * Strict: a target must be a non-empty `host[:port]` string, labels strings; more than 50 targets
 * in all fails (spec rule 4).
 */
export function sdTargets(doc: unknown[]): DiscoveredTarget[] {
  const out: DiscoveredTarget[] = [];
  doc.forEach((group, g) => {
    const grp = group as { targets: unknown[]; labels?: unknown };
    const labels: Record<string, string> = {};
    if (grp.labels !== undefined) {
      if (!isObject(grp.labels)) throw new FormatError('http_sd', `group ${g}: "labels" must be an object of strings`);
      for (const [k, v] of Object.entries(grp.labels)) {
        if (typeof v !== 'string') throw new FormatError('http_sd', `group ${g}: label "${k}" must be a string`);
        if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(k))
          throw new FormatError('http_sd', `group ${g}: "${k}" is not a valid label name`);
        labels[k] = v;
      }
    }
    grp.targets.forEach((t, i) => {
      if (typeof t !== 'string' || !/^[^\s/?#@]+$/.test(t))
        throw new FormatError('http_sd', `group ${g}: target ${i} must be a "host:port" string`);
      out.push({ target: t, labels });
    });
  });
  if (out.length > MAX_DISCOVERED_TARGETS) {
    throw new FormatError(
      'http_sd',
      `the document lists ${out.length} targets; at most ${MAX_DISCOVERED_TARGETS} are followed per run`,
    );
  }
  return out;
}

/**
 * The URL a target is scraped at: `https://<target><__metrics_path__ or /metrics>`, with
 * `__scheme__` honoured (anything but https is then refused by the guard) and `__param_<name>`
 * labels as query parameters, as Prometheus does.
 */
export function targetUrl(t: DiscoveredTarget): string {
  const scheme = t.labels.__scheme__ ?? 'https';
  let path = t.labels.__metrics_path__ ?? '/metrics';
  if (!path.startsWith('/')) path = `/${path}`;
  const url = new URL(`${scheme}://${t.target}${path}`);
  for (const [k, v] of Object.entries(t.labels)) if (k.startsWith('__param_')) url.searchParams.set(k.slice(8), v);
  return url.toString();
}

/**
 * A target's labels merged onto a sample's (Prometheus without honor_labels): the target's win; a
 * sample label they replace is kept as `exported_<name>`. `__`-prefixed labels are meta and dropped;
 * `instance` defaults to the target.
 */
export function mergeTargetLabels(sample: Record<string, string>, t: DiscoveredTarget): Record<string, string> {
  const out = { ...sample };
  const add = (k: string, v: string) => {
    if (Object.hasOwn(out, k) && out[k] !== v) out[`exported_${k}`] = out[k]!;
    out[k] = v;
  };
  for (const [k, v] of Object.entries(t.labels)) if (!k.startsWith('__')) add(k, v);
  if (!Object.hasOwn(t.labels, 'instance')) add('instance', t.target);
  return out;
}
