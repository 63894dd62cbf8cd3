import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Refusal } from './sender.js';

/**
 * Where an interrupted `sluice ingest` of a file stopped (docs/cli.md, "Resuming"): the run id its
 * idempotency keys start with, the batch limits (so the same batches are rebuilt) and how many
 * batches in a row from the start the server acknowledged.
 */
export interface ResumeState {
  run_id: string;
  file: string;
  size: number;
  mtime_ms: number;
  target: string;
  batch_records: number;
  batch_bytes: number;
  /** Batches 0 … acked_batches-1 are stored. */
  acked_batches: number;
  acked_records: number;
  /**
   * Records left out of those batches when they were sent: refused by the server, or found by the
   * check of a batch the server refused (the reader's own refusals, such as a line that is too long,
   * are found again on reading; skipped batches are not checked again). The name is kept from when
   * only the server's refusals were kept here.
   */
  server_refusals: Refusal[];
  updated_at: string;
}

/** One state file per (file as it is now, target): a changed file never resumes into another's run. */
export function statePath(
  dir: string,
  identity: { file: string; size: number; mtimeMs: number; target: string },
): string {
  const h = createHash('sha256')
    .update(JSON.stringify([identity.file, identity.size, identity.mtimeMs, identity.target]))
    .digest('hex')
    .slice(0, 32);
  return join(dir, 'ingest', `${h}.json`);
}

export function newRunId(): string {
  return `sluice-${randomBytes(9).toString('base64url')}`;
}

export function loadState(path: string): ResumeState | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as ResumeState;
  } catch {
    return null;
  }
}

export function saveState(path: string, state: ResumeState): void {
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ ...state, updated_at: new Date().toISOString() }), { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

export function clearState(path: string): void {
  rmSync(path, { force: true });
}
