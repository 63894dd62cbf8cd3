/**
 * Record templates alone (src/pipeline/record-templates.ts) against what they replace: learn the
 * templates of BENCH_RECORDS records (default 4,000; BENCH_INPUT `nested` (default, BENCH_KEY_ORDERS
 * default 3) or `flat`), then per record: a template match, `JSON.parse` of the record's text, and
 * the fingerprint walk of the parsed record, best of BENCH_ROUNDS (default 15) passes each.
 * BENCH_TOUCH_BYTES=n reads n bytes of other memory before each timed match (a cold cache, as in a
 * worker that writes columns between records).
 * Run: npx tsc -p . && node dist/bench/pipeline/template-match.bench.js
 */
import { RecordTemplates } from '../../src/pipeline/record-templates.js';
import { Fingerprinter } from '../../src/schema/fingerprint.js';
import { hashHex } from '../../src/schema/hash.js';
import { makeNestedRecords } from '../transform/nested-records.js';
import { makeNdjsonBodies } from './records.js';

const INPUT = process.env.BENCH_INPUT ?? 'nested';
const N = Number(process.env.BENCH_RECORDS ?? 4000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const TOUCH = Number(process.env.BENCH_TOUCH_BYTES ?? 0);
const lines =
  INPUT === 'flat'
    ? Buffer.from(makeNdjsonBodies(1, N, 0, 'flat')[0]!)
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== '')
    : makeNestedRecords(N, 7, { keyOrders: Number(process.env.BENCH_KEY_ORDERS ?? 3) }).map((r) => JSON.stringify(r));
const body = Buffer.from(lines.join('\n'));
const ranges: number[] = [];
let at = 0;
for (const l of lines) {
  const n = Buffer.byteLength(l);
  ranges.push(at, at + n);
  at += n + 1;
}
const templates = new RecordTemplates();
const fp = new Fingerprinter({ opaquePaths: [], trackedPaths: [], maxDepth: 6 });
for (let k = 0; k < ranges.length; k += 2) {
  if (templates.match(body, ranges[k]!, ranges[k + 1]!)) continue;
  const key = fp.fingerprint(JSON.parse(body.toString('utf8', ranges[k]!, ranges[k + 1]!)));
  if (templates.wants(key)) templates.learn(body, ranges[k]!, ranges[k + 1]!, key, hashHex(fp.last.a, fp.last.b));
}
const junk = new Int32Array(TOUCH >> 2);
let matchUs = Infinity;
let parseUs = Infinity;
let fingerprintUs = Infinity;
let matched = 0;
for (let round = 0; round < ROUNDS; round++) {
  let ms = 0;
  matched = 0;
  for (let k = 0; k < ranges.length; k += 2) {
    for (let j = 0; j < junk.length; j += 16) junk[j]!++;
    const t0 = performance.now();
    if (templates.match(body, ranges[k]!, ranges[k + 1]!)) matched++;
    ms += performance.now() - t0;
  }
  matchUs = Math.min(matchUs, (ms * 1000) / lines.length);
  const parsed: unknown[] = [];
  let t0 = performance.now();
  for (let k = 0; k < ranges.length; k += 2) parsed.push(JSON.parse(body.toString('utf8', ranges[k]!, ranges[k + 1]!)));
  parseUs = Math.min(parseUs, ((performance.now() - t0) * 1000) / lines.length);
  t0 = performance.now();
  for (const r of parsed) fp.fingerprint(r);
  fingerprintUs = Math.min(fingerprintUs, ((performance.now() - t0) * 1000) / lines.length);
}
console.log(
  `${INPUT}: ${lines.length} records of ${(body.length / lines.length).toFixed(0)} B, ${matched} matched; µs/record (best of ${ROUNDS}): match ${matchUs.toFixed(2)}${TOUCH > 0 ? ` (${TOUCH} bytes touched before each)` : ''}, JSON.parse ${parseUs.toFixed(2)}, fingerprint ${fingerprintUs.toFixed(2)}`,
);
