import type { OutputFieldType } from './output-schema.js';
import { TransformIsolate, type BatchInput, type LoadedScript } from './isolate.js';
import { decodeRunResult } from './harness/decode-answer.js';
import type { FailureReason, RawAnswer, RunResult, TransformFailure } from './harness.js';

/**
 * Runs view transform scripts: `function transform(record, ctx)` returning an object, an array of
 * objects, or null to skip the record. One `TransformSandbox` per worker thread, holding one
 * isolated-vm isolate (only the ECMAScript builtins: no require, timers, I/O, WebAssembly).
 *
 * Each (view, batch) is ONE synchronous isolate call: the records go in as one JSON text, the
 * harness (harness.ts) calls `transform` per record and answers with one value (see its wire format). The first record
 * that throws or returns something else fails the whole call: the caller puts the view into its
 * error state with the outcome's message, which names the record and the error.
 *
 * Each script runs in its own context, created on first use and kept in an LRU keyed by script
 * hash (`maxCachedScripts`). Global state a script keeps between calls is not guaranteed: the
 * context is recreated after eviction, a timeout or a rebuild of the isolate.
 *
 * Output values JSON cannot represent are dropped as JSON.stringify drops them (functions,
 * undefined, symbols: the key is missing, the column reads null); cycles and BigInt fail the batch.
 *
 * Not contained here: some allocations abort the whole process with a V8 fatal error before
 * isolated-vm's limit applies (see sandbox-process.ts). `TransformProcess` runs this class in a
 * child process for that reason.
 */

export interface TransformSandboxOptions {
  /** Heap limit of the isolate (isolated-vm's `memoryLimit`), default 128. */
  memoryLimitMb?: number;
  /**
   * Time limit of one call (one batch of one view), default 2000. isolated-vm measures it as wall
   * time of the call, so a busy machine counts against it.
   */
  cpuTimeMsPerCall?: number;
  /** Script contexts kept, least recently used evicted; default 64. */
  maxCachedScripts?: number;
  /** Cap on the JSON text of one call's outputs, in UTF-16 units (a typed column value counts 8); default 64 Mi. */
  maxOutputChars?: number;
}

/** A view's script. */
export interface ViewScript {
  /** ctx.view_id */
  viewId: string;
  /** Stable hash of `script`; the cache key. */
  scriptHash: string;
  script: string;
  /**
   * The view's declared output fields: when given, the outputs come back column-wise (`columns`,
   * `extra` in the outcome, see harness.ts); absent or empty: as row objects (`outputs`).
   */
  fields?: readonly string[];
  /**
   * The declared type of each of `fields` (absent: every column comes back as JSON). A `number` or
   * `date` column of numbers comes back as a Float64Array, a `boolean` one as a Uint8Array; a
   * `date` field's value that is its record's `ctx.timestamp` or `ctx.received_at` comes back as
   * that time's epoch ms, which is what the string coerces to (harness.ts).
   */
  types?: readonly OutputFieldType[];
}

/** One batch of one view: the script and the records with their ctx columns (see `BatchInput`). */
export interface TransformInput extends BatchInput, ViewScript {}

/**
 * A value, never a throw (`run` throws only when the caller breaks `BatchInput`: a record that is
 * not JSON, record count ≠ ctx column lengths). `sources[k]` is the index of the record output `k` came from
 * (non-decreasing); `rows` = outputs.length. `recordIndex` is the record the failure happened
 * on, null when none was running (loading the script, parsing the input, converting outputs).
 */
export type TransformOutcome = RunResult;
export type TransformFailureReason = FailureReason;
export type { RawAnswer, TransformFailure };
export type { BatchInput };

export const DEFAULT_MEMORY_LIMIT_MB = 128;
export const DEFAULT_CPU_TIME_MS_PER_CALL = 2000;
export const DEFAULT_MAX_CACHED_SCRIPTS = 64;
export const DEFAULT_MAX_OUTPUT_CHARS = 64 * 1024 * 1024;

export class TransformSandbox {
  private readonly memoryLimitMb: number;
  private readonly timeoutMs: number;
  private readonly maxCachedScripts: number;
  private readonly maxOutputChars: number;
  private isolate: TransformIsolate | null = null;
  /** Insertion order = recency: a hit moves the entry to the end. */
  private readonly scripts = new Map<string, LoadedScript>();
  private builds = 0;

  constructor(opts: TransformSandboxOptions = {}) {
    this.memoryLimitMb = opts.memoryLimitMb ?? DEFAULT_MEMORY_LIMIT_MB;
    this.timeoutMs = opts.cpuTimeMsPerCall ?? DEFAULT_CPU_TIME_MS_PER_CALL;
    this.maxCachedScripts = Math.max(1, opts.maxCachedScripts ?? DEFAULT_MAX_CACHED_SCRIPTS);
    this.maxOutputChars = opts.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  }

  /** Runs `input.script`'s transform over every record of the batch. */
  run(input: TransformInput): TransformOutcome {
    const r = this.runRaw(input);
    return r.status === 'answer' ? decodeRunResult(r.answer, r.records, r.fields) : r;
  }

  /**
   * `run` without decoding the answer: for a host process that passes the answer on (see
   * sandbox-process.ts) and decodes it where the outputs are used.
   */
  runRaw(input: TransformInput): RawAnswer | TransformFailure {
    const iso = this.currentIsolate();
    let loaded = this.scripts.get(input.scriptHash);
    if (loaded !== undefined && loaded.script === input.script) {
      this.scripts.delete(input.scriptHash);
      this.scripts.set(input.scriptHash, loaded);
    } else {
      if (loaded !== undefined) this.forget(input.scriptHash);
      const r = iso.load(input.script, this.timeoutMs, this.maxOutputChars);
      if (r.status === 'failed') {
        if (iso.disposed) this.drop();
        const at = r.reason === 'syntax' && r.line !== null ? ` (line ${r.line}, column ${r.column})` : '';
        return { status: 'failed', reason: r.reason, recordIndex: null, message: r.message + at };
      }
      loaded = r;
      this.scripts.set(input.scriptHash, loaded);
      while (this.scripts.size > this.maxCachedScripts) this.forget(this.scripts.keys().next().value as string);
    }
    const outcome = iso.call(loaded, input, input.viewId, this.timeoutMs, input.fields, input.types);
    if (outcome.status === 'failed') {
      if (iso.disposed) this.drop();
      // The call was cut off mid-script: its globals may be half-updated.
      else if (outcome.reason === 'timeout') this.forget(input.scriptHash);
    }
    return outcome;
  }

  /** Scripts with a live context (for tests and metrics). */
  get cachedScripts(): number {
    return this.scripts.size;
  }

  /** How many isolates this sandbox has built (1 + rebuilds after the memory limit). */
  get isolateBuilds(): number {
    return this.builds;
  }

  dispose(): void {
    this.drop();
  }

  private currentIsolate(): TransformIsolate {
    if (this.isolate === null || this.isolate.disposed) {
      this.drop();
      this.isolate = new TransformIsolate(this.memoryLimitMb);
      this.builds++;
    }
    return this.isolate;
  }

  private forget(hash: string): void {
    const loaded = this.scripts.get(hash);
    if (loaded === undefined) return;
    this.scripts.delete(hash);
    this.isolate?.unload(loaded);
  }

  /** Disposes the isolate; its contexts go with it. */
  private drop(): void {
    this.scripts.clear();
    this.isolate?.dispose();
    this.isolate = null;
  }
}
