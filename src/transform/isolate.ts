import ivm from 'isolated-vm';
import { recordsTextOf } from './records-text.js';
import type { OutputFieldType } from './output-schema.js';
import type { TemplateRecords } from './record-slots.js';
import {
  MAX_ERROR_MESSAGE_CHARS,
  PROGRESS_IDLE,
  PROGRESS_SERIALIZING,
  PROGRESS_SLOTS,
  SCRIPT_FILENAME,
  scriptLocation,
  versionColumn,
  type SchemaVersions,
  type RawAnswer,
  type TransformFailure,
} from './harness.js';
import { HARNESS_SOURCE } from './harness/program-source.js';

/**
 * The one boundary to isolated-vm. A `TransformIsolate` owns one V8 isolate with the harness
 * compiled once; `load` gives a user script its own context (one script cannot see or break
 * another's globals), `call` runs one batch through it with one synchronous isolate call. Every
 * isolated-vm failure becomes a value here: a timeout, the memory limit, an error of the script.
 *
 * isolated-vm reports a timeout and the memory limit only by message text ("Script execution timed
 * out.", "…disposed…due to memory limit") and `isolate.isDisposed`; they are read in `classify`
 * and nowhere else.
 */

/** Why loading a script failed; `line`/`column` (1-based) when the engine named a place. */
export interface LoadFailure {
  status: 'failed';
  reason: 'syntax' | 'no_transform_function' | 'threw' | 'timeout' | 'memory';
  message: string;
  line: number | null;
  column: number | null;
}

/** A script loaded in its own context, ready for `call`. */
export interface LoadedScript {
  readonly status: 'loaded';
  readonly script: string;
  readonly context: ivm.Context;
  readonly run: ivm.Reference<(...args: unknown[]) => RawAnswer['answer']>;
  /** Record shapes (record-slots.ts) the context has compiled factories for. */
  readonly shapes: Set<number>;
}

/**
 * One batch of records, the same for every view run over it. `recordsText` is the records' JSON
 * texts joined by U+001E (RS; no JSON text holds it raw, so it is built from spool bytes by
 * joining byte ranges with 0x1E), as a string or as its UTF-8 bytes: bytes cross to the sandbox's
 * process as one copy and are decoded there (a string of records with any non-ASCII character is
 * two bytes per character, so twice the bytes to copy, and decoding it was the worker's largest
 * view cost on nested records). Record i's ctx is `{ view_id, schema_version, received_at,
 * timestamp }` with the times given here as epoch ms and seen by the script as ISO-8601 strings
 * (null when not a valid time).
 */
export interface BatchInput {
  recordsText: string | Uint8Array;
  schemaVersion: SchemaVersions;
  /** Epoch ms per record: when Sluice received it. */
  receivedAt: Float64Array;
  /** Epoch ms per record: its event time. */
  timestamp: Float64Array;
  /**
   * Records matched by a template, built in the sandbox from their slot values instead of parsed
   * (record-slots.ts); absent: every record is parsed from its text.
   */
  templates?: TemplateRecords;
}

type IvmFailure =
  | { kind: 'timeout'; message: string }
  | { kind: 'memory'; message: string }
  | { kind: 'error'; error: unknown };

export class TransformIsolate {
  private readonly isolate: ivm.Isolate;
  private readonly harness: ivm.Script;
  private readonly lookup: ivm.Script;
  /** Index of the record the harness is running (shared memory: readable after a timeout or OOM). */
  private readonly progress: Int32Array;
  private readonly progressCopy: ivm.ExternalCopy<SharedArrayBuffer>;
  readonly memoryLimitMb: number;

  constructor(memoryLimitMb: number) {
    this.memoryLimitMb = memoryLimitMb;
    this.isolate = new ivm.Isolate({ memoryLimit: memoryLimitMb });
    this.harness = this.isolate.compileScriptSync(HARNESS_SOURCE, { filename: 'sluice-harness.js' });
    // A script's `const transform = …` is a lexical global, not a property of globalThis: a
    // second script in the same context sees both kinds.
    this.lookup = this.isolate.compileScriptSync(`typeof transform === 'function' ? transform : undefined`, {
      filename: 'sluice-lookup.js',
    });
    const sab = new SharedArrayBuffer(4 * PROGRESS_SLOTS);
    this.progress = new Int32Array(sab);
    this.progressCopy = new ivm.ExternalCopy(sab);
  }

  /** True once the isolate is gone (memory limit, `dispose`): build a new one. */
  get disposed(): boolean {
    return this.isolate.isDisposed;
  }

  /** Compiles `script` without running it: null, or the syntax error (safe on any thread). */
  checkSyntax(script: string): LoadFailure | null {
    const compiled = this.compile(script);
    if (!(compiled instanceof ivm.Script)) return compiled;
    compiled.release();
    return null;
  }

  private compile(script: string): ivm.Script | LoadFailure {
    try {
      return this.isolate.compileScriptSync(script, { filename: SCRIPT_FILENAME });
    } catch (err) {
      const f = this.classify(err);
      if (f.kind !== 'error') return loadFailure(f.kind, f.message);
      const text = errorText(f.error);
      const at = scriptLocation(text);
      // "Unexpected token ';' [view-transform.js:2:13]": the place goes to line/column.
      const message = text.replace(/\s*\[view-transform\.js:\d+:\d+\]\s*$/, '');
      return { status: 'failed', reason: 'syntax', message, line: at?.line ?? null, column: at?.column ?? null };
    }
  }

  /**
   * Compiles `script`, runs its top-level code in a new context (within `timeoutMs`) and binds its
   * `transform` to the harness.
   */
  load(script: string, timeoutMs: number, maxOutputChars: number): LoadedScript | LoadFailure {
    const compiled = this.compile(script);
    if (!(compiled instanceof ivm.Script)) return compiled;
    const context = this.isolate.createContextSync();
    let install: ivm.Reference<unknown> | undefined;
    let fn: ivm.Reference<unknown> | undefined;
    let handedOut = false;
    try {
      install = this.harness.runSync(context, { reference: true, timeout: timeoutMs }) as ivm.Reference<unknown>;
      try {
        compiled.runSync(context, { timeout: timeoutMs });
      } catch (err) {
        const f = this.classify(err);
        if (f.kind === 'timeout')
          return loadFailure('timeout', `the script's top-level code did not finish within ${timeoutMs} ms`);
        if (f.kind === 'memory')
          return loadFailure(
            'memory',
            `the script's top-level code ran out of memory (limit ${this.memoryLimitMb} MB)`,
          );
        const text = errorText(f.error);
        const at = scriptLocation(stackOf(f.error));
        return {
          status: 'failed',
          reason: 'threw',
          message: `the script threw while loading: ${text}${at ? ` (line ${at.line}, column ${at.column})` : ''}`,
          line: at?.line ?? null,
          column: at?.column ?? null,
        };
      }
      fn = this.lookup.runSync(context, { reference: true, timeout: timeoutMs }) as ivm.Reference<unknown>;
      if (fn.typeof !== 'function')
        return loadFailure(
          'no_transform_function',
          'the script does not define a function named transform (declare `function transform(record, ctx) { … }`)',
        );
      const run = install.applySync(undefined, [fn.derefInto(), this.progressCopy.copyInto(), maxOutputChars], {
        result: { reference: true },
      }) as LoadedScript['run'];
      handedOut = true;
      return { status: 'loaded', script, context, run, shapes: new Set() };
    } catch (err) {
      const f = this.classify(err);
      if (f.kind === 'error') throw err;
      return loadFailure(
        f.kind,
        f.kind === 'timeout'
          ? `loading the script did not finish within ${timeoutMs} ms`
          : `loading the script ran out of memory (limit ${this.memoryLimitMb} MB)`,
      );
    } finally {
      install?.release();
      fn?.release();
      compiled.release();
      // A context not handed out is freed now rather than at some later GC.
      if (!handedOut && !this.isolate.isDisposed) context.release();
    }
  }

  /**
   * One batch: one synchronous isolate call (see `BatchInput`), answering the harness's string
   * (decoded by `decodeRunResult`) or a failure. After a `timeout` the context may
   * hold half-done state of the script: the caller drops it. After `memory` the isolate is
   * disposed: the caller builds a new one.
   */
  call(
    loaded: LoadedScript,
    batch: BatchInput,
    viewId: string,
    timeoutMs: number,
    fields: readonly string[] = [],
    types: readonly OutputFieldType[] = [],
  ): RawAnswer | TransformFailure {
    const n = batch.receivedAt.length;
    if (batch.timestamp.length !== n)
      throw new Error(`transform sandbox: receivedAt has ${n} entries, timestamp ${batch.timestamp.length}`);
    const versions = versionColumn(batch.schemaVersion);
    if (versions.index !== null && versions.index.length !== n)
      throw new Error(`transform sandbox: schemaVersion has ${versions.index.length} entries for ${n} records`);
    const text = recordsTextOf(batch.recordsText);
    const tpl = batch.templates;
    if (tpl !== undefined && tpl.ids.length !== n)
      throw new Error(`transform sandbox: template ids have ${tpl.ids.length} entries for ${n} records`);
    // The shapes this context has not compiled yet go with the call.
    const fresh: Array<[number, string]> = [];
    for (const id of tpl?.used ?? []) {
      if (loaded.shapes.has(id)) continue;
      const desc = tpl!.shapes.get(id);
      if (desc === undefined) throw new Error(`transform sandbox: record shape ${id} is used but not described`);
      fresh.push([id, desc]);
    }
    this.progress[0] = PROGRESS_IDLE;
    let answer: RawAnswer['answer'];
    try {
      answer = loaded.run.applySync(
        undefined,
        [
          // Measured: ExternalCopy beats a plain string argument for the records text, and the
          // number columns go over as typed-array copies (a memcpy).
          new ivm.ExternalCopy(text).copyInto({ release: true }),
          viewId,
          JSON.stringify(versions.values),
          versions.index === null ? null : new ivm.ExternalCopy(versions.index).copyInto({ release: true }),
          new ivm.ExternalCopy(batch.receivedAt).copyInto({ release: true }),
          new ivm.ExternalCopy(batch.timestamp).copyInto({ release: true }),
          fields.length === 0 ? null : JSON.stringify(fields),
          fields.length === 0 || types.length === 0 ? null : JSON.stringify(types),
          tpl === undefined ? null : new ivm.ExternalCopy(tpl.ids).copyInto({ release: true }),
          tpl === undefined ? null : new ivm.ExternalCopy(tpl.ints).copyInto({ release: true }),
          tpl === undefined ? null : new ivm.ExternalCopy(tpl.nums).copyInto({ release: true }),
          fresh.length === 0 ? null : JSON.stringify(fresh),
        ] as never,
        // Copied out: the typed columns of a column answer come as typed arrays (a memcpy).
        { timeout: timeoutMs, result: { copy: true } },
      ) as RawAnswer['answer'];
    } catch (err) {
      const f = this.classify(err);
      const [at, first, last] = this.progress as unknown as [number, number, number];
      let where = 'while reading the records';
      let recordIndex: number | null = null;
      if (at >= 0) {
        where = `on record ${at}`;
        recordIndex = at;
      } else if (at === PROGRESS_SERIALIZING) {
        where =
          first === last
            ? `while converting the output of record ${first} to JSON`
            : `while converting the outputs of records ${first}–${last} to JSON`;
        recordIndex = first === last ? first : null;
      }
      if (f.kind === 'timeout')
        return {
          status: 'failed',
          reason: 'timeout',
          recordIndex,
          message: `transform timed out ${where}: the batch did not finish within ${timeoutMs} ms`,
        };
      if (f.kind === 'memory')
        return {
          status: 'failed',
          reason: 'memory',
          recordIndex,
          message: `transform ran out of memory ${where} (limit ${this.memoryLimitMb} MB)`,
        };
      return {
        status: 'failed',
        reason: 'threw',
        recordIndex,
        message: `transform failed ${where}: ${errorText(f.error)}`,
      };
    }
    // Compiled by a call that answered (a failed call's context may be dropped: they are sent again).
    if (!(typeof answer === 'string' && answer.charCodeAt(0) === 0x78)) for (const [id] of fresh) loaded.shapes.add(id);
    return { status: 'answer', answer, records: n, fields: fields.length };
  }

  /** Frees a loaded script's context. */
  unload(loaded: LoadedScript): void {
    if (this.isolate.isDisposed) return;
    loaded.run.release();
    loaded.context.release();
  }

  dispose(): void {
    if (!this.isolate.isDisposed) this.isolate.dispose();
  }

  private classify(err: unknown): IvmFailure {
    const message = err instanceof Error ? err.message : '';
    if (this.isolate.isDisposed && /memory limit/i.test(message)) return { kind: 'memory', message };
    if (message === 'Script execution timed out.') return { kind: 'timeout', message };
    if (this.isolate.isDisposed) return { kind: 'memory', message: message || 'the isolate was disposed' };
    return { kind: 'error', error: err };
  }
}

function loadFailure(reason: LoadFailure['reason'], message: string): LoadFailure {
  return { status: 'failed', reason, message, line: null, column: null };
}

/** `TypeError: message` for errors, the value as text for anything else thrown. */
function errorText(err: unknown): string {
  let text: string;
  if (err instanceof Error) text = `${err.name}: ${err.message}`;
  else {
    try {
      text = String(err);
    } catch {
      text = 'a value that cannot be converted to text';
    }
  }
  return text.length > MAX_ERROR_MESSAGE_CHARS ? `${text.slice(0, MAX_ERROR_MESSAGE_CHARS)}…` : text;
}

function stackOf(err: unknown): string {
  return err instanceof Error && typeof err.stack === 'string' ? err.stack : '';
}
