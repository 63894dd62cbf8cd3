import type { OutboundClient } from '../outbound/types.js';
import { fetchOnce, statusError, type FetchLimits, type FetchOnce } from './fetch-once.js';
import { FormatError } from './formats/format-error.js';
import { MAX_DISCOVERED_TARGETS, mergeTargetLabels, targetUrl } from './formats/http-sd.js';
import type { RecordObject } from './formats/json.js';
import { metricsRecords } from './formats/metrics-text.js';
import { formatOfContentType, parseBody, sniffFormat, type ParsedBody } from './formats/parse-body.js';
import type { DiscoveredTarget, ErrorStage, PullRecord, Validators } from './records.js';

/** Attempts per discovered target within one run (rule 4: targets are retried individually). */
export const TARGET_ATTEMPTS = 2;
/** Discovered targets fetched at once. */
const TARGET_CONCURRENCY = 8;
const PULL_ACCEPT =
  'application/json, application/x-ndjson, text/csv, text/tab-separated-values, application/openmetrics-text;version=1.0.0;q=0.9, text/plain;version=0.0.4;q=0.8, */*;q=0.5';
const METRICS_ACCEPT = 'application/openmetrics-text;version=1.0.0;q=0.9,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

/** What one fetch of a pull found; nothing is written here. */
export interface PullFetchResult {
  ok: boolean;
  /** The endpoint answered 304 to a conditional request and the pull is not a discovery pull. */
  unchanged: boolean;
  status: number;
  statusText: string;
  responseTimeMs: number;
  byteLength: number;
  body: Buffer | null;
  records: RecordObject[];
  errorStage: ErrorStage | null;
  /** The failure, or on success a note (targets that failed, a discovery list reused). */
  error: string | null;
  /** Validators of this answer, for the next conditional request. */
  validators: Validators | null;
  /** The target list read in full this run (a discovery pull), else null. */
  targets: DiscoveredTarget[] | null;
}

function failed(r: Partial<PullFetchResult> & { errorStage: ErrorStage; error: string }): PullFetchResult {
  return {
    ok: false,
    unchanged: false,
    status: 0,
    statusText: '',
    responseTimeMs: 0,
    byteLength: 0,
    body: null,
    records: [],
    validators: null,
    targets: null,
    ...r,
  };
}

/**
 * Fetch a pull once: the endpoint (conditionally when `conditional` and validators are known), its
 * body parsed by format, and a service-discovery document followed (rules 3–4). When the discovery
 * document cannot be read, the last good target list is used, and the run says so.
 */
export async function fetchPull(
  outbound: OutboundClient,
  pull: PullRecord,
  headers: Record<string, string>,
  opts: { conditional: boolean; limits: FetchLimits; signal?: AbortSignal },
): Promise<PullFetchResult> {
  const sent = { ...headers };
  const has = (name: string) => Object.keys(sent).some((k) => k.toLowerCase() === name);
  // Every format a pull reads, unless the pull sends its own Accept.
  if (!has('accept')) sent.Accept = PULL_ACCEPT;
  if (opts.conditional && pull.validators) {
    if (pull.validators.etag && !has('if-none-match')) sent['If-None-Match'] = pull.validators.etag;
    if (pull.validators.last_modified && !has('if-modified-since'))
      sent['If-Modified-Since'] = pull.validators.last_modified;
  }
  const forTargets = targetHeaders(headers);
  const answer = await fetchOnce(outbound, pull, sent, opts.limits, opts.signal);
  const base = answer.ok
    ? {
        status: answer.res.status,
        statusText: answer.res.statusText,
        responseTimeMs: answer.elapsedMs,
        byteLength: answer.res.body.length,
        body: answer.res.body,
      }
    : { responseTimeMs: answer.elapsedMs };
  const lastList = pull.discovered_targets;

  if (!answer.ok || (answer.res.status !== 304 && (answer.res.status < 200 || answer.res.status > 299))) {
    const error = answer.ok ? statusError(answer.res) : answer.error;
    const errorStage = answer.ok ? 'response' : answer.stage;
    if (lastList) {
      const followed = await followTargets(outbound, lastList, forTargets, opts.limits, opts.signal);
      return finishTargets(
        base,
        followed,
        null,
        `the discovery document could not be read (${error}); the last good list of ${lastList.length} targets was used`,
        errorStage,
      );
    }
    return failed({ ...base, errorStage, error });
  }
  const res = answer.res;
  const validators = validatorsOf(res.headers);
  if (res.status === 304) {
    if (lastList)
      return finishTargets(
        base,
        await followTargets(outbound, lastList, forTargets, opts.limits, opts.signal),
        lastList,
        null,
        'response',
        validators ?? pull.validators,
      );
    return {
      ...base,
      ok: true,
      unchanged: true,
      records: [],
      errorStage: null,
      error: null,
      validators: pull.validators,
      targets: null,
    } as PullFetchResult;
  }
  let parsed: ParsedBody;
  try {
    parsed = parseBody(res.body.toString('utf8'), res.headers['content-type'], pull.json_records_path);
  } catch (err) {
    if (err instanceof FormatError) return failed({ ...base, errorStage: 'parse', error: err.message });
    throw err;
  }
  if (parsed.kind === 'records')
    return {
      ...base,
      ok: true,
      unchanged: false,
      records: parsed.records,
      errorStage: null,
      error: null,
      validators,
      targets: null,
    } as PullFetchResult;
  return finishTargets(
    base,
    await followTargets(outbound, parsed.targets, forTargets, opts.limits, opts.signal),
    parsed.targets,
    null,
    'response',
    validators,
  );
}

interface TargetResult {
  records: RecordObject[];
  failures: Array<{ url: string; stage: ErrorStage; error: string }>;
  total: number;
}

function finishTargets(
  base: Partial<PullFetchResult>,
  t: TargetResult,
  list: DiscoveredTarget[] | null,
  note: string | null,
  noteStage: ErrorStage,
  validators: Validators | null = null,
): PullFetchResult {
  const first = t.failures[0];
  if (t.total > 0 && t.failures.length === t.total) {
    return failed({
      ...base,
      errorStage: first!.stage,
      error: `all ${t.total} discovered targets failed; first: ${first!.url}: ${first!.error}`,
    });
  }
  const notes: string[] = [];
  if (note) notes.push(note);
  if (first)
    notes.push(`${t.failures.length} of ${t.total} discovered targets failed; first: ${first.url}: ${first.error}`);
  return {
    ok: true,
    unchanged: false,
    status: base.status ?? 0,
    statusText: base.statusText ?? '',
    responseTimeMs: base.responseTimeMs ?? 0,
    byteLength: base.byteLength ?? 0,
    body: base.body ?? null,
    records: t.records,
    errorStage: notes.length ? (first ? first.stage : noteStage) : null,
    error: notes.length ? notes.join('; ') : null,
    validators,
    targets: list,
  };
}

/**
 * What a discovered target is sent: the pull's own headers, as Prometheus sends a scrape job's
 * credentials to every target it discovers (docs/pulls-and-checks.md, "HTTP service discovery"),
 * with the metrics `Accept` and without the document's conditional headers. A target that
 * redirects to another origin loses the credential headers there (the outbound client's rule).
 */
function targetHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower === 'accept' || lower === 'if-none-match' || lower === 'if-modified-since') continue;
    out[name] = value;
  }
  out.Accept = METRICS_ACCEPT;
  return out;
}

/** Each target fetched under the same guard, retried once, its samples labelled with the target's labels. */
async function followTargets(
  outbound: OutboundClient,
  targets: DiscoveredTarget[],
  headers: Record<string, string>,
  limits: FetchLimits,
  signal?: AbortSignal,
): Promise<TargetResult> {
  const perTarget: Array<RecordObject[] | null> = new Array(targets.length).fill(null);
  const failures: TargetResult['failures'] = [];
  let next = 0;
  const worker = async () => {
    while (next < targets.length) {
      const i = next++;
      const t = targets[i]!;
      let url: string;
      try {
        url = targetUrl(t);
      } catch {
        failures.push({ url: t.target, stage: 'request', error: 'not a valid target address' });
        continue;
      }
      let last: { stage: ErrorStage; error: string } = { stage: 'request', error: 'not fetched' };
      for (let attempt = 0; attempt < TARGET_ATTEMPTS && !signal?.aborted; attempt++) {
        const got = await scrape(outbound, url, headers, limits, signal);
        if ('records' in got) {
          perTarget[i] = got.records.map((r) => ({
            ...r,
            labels: mergeTargetLabels(r.labels as Record<string, string>, t),
          }));
          break;
        }
        last = got;
        // A body that does not parse will not parse on a second try.
        if (got.stage === 'parse') break;
      }
      if (perTarget[i] === null) failures.push({ url, ...last });
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(TARGET_CONCURRENCY, MAX_DISCOVERED_TARGETS, targets.length) }, worker),
  );
  return { records: perTarget.flatMap((r) => r ?? []), failures, total: targets.length };
}

async function scrape(
  outbound: OutboundClient,
  url: string,
  headers: Record<string, string>,
  limits: FetchLimits,
  signal?: AbortSignal,
): Promise<{ records: RecordObject[] } | { stage: ErrorStage; error: string }> {
  const answer: FetchOnce = await fetchOnce(
    outbound,
    { endpoint_url: url, method: 'get', headers: [], request_body: null },
    headers,
    limits,
    signal,
  );
  if (!answer.ok) return { stage: answer.stage, error: answer.error };
  if (answer.res.status < 200 || answer.res.status > 299) return { stage: 'response', error: statusError(answer.res) };
  const text = answer.res.body.toString('utf8');
  try {
    const format = formatOfContentType(answer.res.headers['content-type']) ?? sniffFormat(text);
    if (format !== 'prometheus' && format !== 'openmetrics')
      return { stage: 'parse', error: `the target answered ${format}, not a metrics exposition` };
    return { records: metricsRecords(text, format) as unknown as RecordObject[] };
  } catch (err) {
    if (err instanceof FormatError) return { stage: 'parse', error: err.message };
    throw err;
  }
}

function validatorsOf(headers: Record<string, string>): Validators | null {
  const etag = headers.etag ?? null;
  const lastModified = headers['last-modified'] ?? null;
  return etag || lastModified ? { etag, last_modified: lastModified } : null;
}
