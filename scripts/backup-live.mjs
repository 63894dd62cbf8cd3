#!/usr/bin/env node
// Back up a running Sluice's data directory without stopping it (docs/self-hosting.md, "Backup").
//
//   node scripts/backup-live.mjs --pid <sluice pid> <data dir> <backup dir>
//
// 1. Copies the data directory while the server runs (the bulk: Parquet files never change once
//    written under their final name).
// 2. Freezes the server (SIGSTOP), brings the copy level with the directory as it is at that instant
//    (LMDB, DuckDB and its WAL, files added or removed since step 1), and thaws it (SIGCONT), also on
//    any failure. The copy is then exactly what a crash at that instant leaves on disk, which Sluice
//    recovers from with nothing acknowledged lost and nothing counted twice. Requests arriving during
//    the freeze wait in the socket backlog; nothing is refused.
//
// Prints one JSON line: { frozen_at, thawed_at, pause_ms, files, bytes } (epoch ms; frozen_at is
// taken before the stop signal is sent, so every answer a client received before it is in the copy).
import { copyFileSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { join } from 'node:path';

function usage(message) {
  process.stderr.write(
    `backup-live: ${message}\nusage: node scripts/backup-live.mjs --pid <sluice pid> <data dir> <backup dir>\n`,
  );
  process.exit(2);
}

const args = process.argv.slice(2);
const at = args.indexOf('--pid');
if (at < 0 || !/^\d+$/.test(args[at + 1] ?? '')) usage('--pid <pid of the running server> is required');
const pid = Number(args[at + 1]);
const [src, dst] = args.filter((_, i) => i !== at && i !== at + 1);
if (!src || !dst) usage('give the data directory and the backup directory');
try {
  process.kill(pid, 0);
} catch {
  usage(`no process ${pid}`);
}

/** Make `to` hold exactly the files of `from`: copy new or changed ones (size or mtime), remove the rest. */
function sync(from, to, stats) {
  mkdirSync(to, { recursive: true });
  const present = new Set();
  for (const name of readdirSync(from)) {
    // LMDB's lock file describes live readers of this process: a restored copy makes its own.
    if (name === 'lock.mdb') continue;
    present.add(name);
    const a = join(from, name);
    const b = join(to, name);
    let s;
    try {
      s = lstatSync(a);
    } catch {
      continue; // removed while the server runs (step 1 only; nothing moves while frozen)
    }
    if (s.isDirectory()) {
      sync(a, b, stats);
      continue;
    }
    if (!s.isFile()) continue;
    let d = null;
    try {
      d = lstatSync(b);
    } catch {
      // not copied yet
    }
    if (d && d.size === s.size && d.mtimeMs === s.mtimeMs) continue;
    try {
      copyFileSync(a, b);
      utimesSync(b, s.atime, s.mtime);
      stats.files++;
      stats.bytes += s.size;
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
  }
  for (const name of readdirSync(to)) if (!present.has(name)) rmSync(join(to, name), { recursive: true, force: true });
}

/**
 * Wait until every thread of the process is stopped (Linux: /proc/<pid>/task/<tid>/stat state "T"):
 * the signal is delivered asynchronously, and a worker thread still writing would tear the copy.
 */
function waitStopped() {
  const deadline = Date.now() + 5000;
  for (;;) {
    let all = true;
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
        if (state !== 'T' && state !== 't') all = false;
      }
    } catch {
      return; // no /proc (not Linux): SIGSTOP stops every thread before the process runs again
    }
    if (all) return;
    if (Date.now() > deadline) throw new Error(`process ${pid} did not stop within 5 s`);
  }
}

sync(src, dst, { files: 0, bytes: 0 });
const stats = { files: 0, bytes: 0 };
const frozenAt = Date.now();
process.kill(pid, 'SIGSTOP');
let thawedAt;
try {
  waitStopped();
  sync(src, dst, stats);
} finally {
  process.kill(pid, 'SIGCONT');
  thawedAt = Date.now();
}
process.stdout.write(
  JSON.stringify({ frozen_at: frozenAt, thawed_at: thawedAt, pause_ms: thawedAt - frozenAt, ...stats }) + '\n',
);
