/**
 * Distinct counting over 64-bit xxHash64: exact (the hashes themselves) up to EXACT_MAX values, then
 * HyperLogLog at precision 14 (16,384 registers, standard error ≈ 0.81%) with Ertl's improved estimator ("New cardinality estimation algorithms for
 * HyperLogLog sketches", 2017), which needs no bias tables and is accurate from 0 upwards.
 *
 * Canonical bytes hashed for a value (xxHash64, seed 0), so that "1", 1 and true are distinct:
 * - string:  0x73 ('s') then its UTF-8 (lone surrogates become U+FFFD, as TextEncoder does);
 * - number:  0x6E ('n') then the float64, little-endian; −0 is hashed as 0, and every NaN as the
 *            quiet NaN 0x7FF8000000000000 (so -NaN and NaN count once);
 * - boolean: 0x62 ('b') then 0x00 or 0x01.
 */
import xxhash, { type XXHashAPI } from 'xxhash-wasm';
import { ByteReader, ByteWriter, SketchDecodeError } from './sketch-bytes.js';

const P = 14;
const M = 1 << P;
const Q = 64 - P; // hash bits left after the register index
const MAX_RHO = Q + 1; // rho of an all-zero remainder
const FORMAT_VERSION = 1;
const SPARSE = 0;
const DENSE = 1;
const EXACT = 2;
const DENSE_BYTES = (M * 6) / 8; // four 6-bit registers in three bytes

let hasher: XXHashAPI | null = null;
let trueHash = 0n;
let falseHash = 0n;
let nanHash = 0n;
const numberBytes = new Uint8Array(9);
const numberView = new DataView(numberBytes.buffer);
numberBytes[0] = 0x6e;

/**
 * Instantiates the xxHash WebAssembly module. Await it once before `hashValue` or
 * `DistinctSketch.add`; later calls return at once.
 */
export async function loadHasher(): Promise<void> {
  if (hasher !== null) return;
  const api = await xxhash();
  trueHash = api.h64Raw(Uint8Array.of(0x62, 1));
  falseHash = api.h64Raw(Uint8Array.of(0x62, 0));
  nanHash = api.h64Raw(Uint8Array.of(0x6e, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f));
  hasher = api;
}

/** The unsigned 64-bit xxHash64 of a value's canonical bytes (see the module comment). */
export function hashValue(value: string | number | boolean): bigint {
  if (hasher === null) throw new Error('hashValue: call `await loadHasher()` first');
  if (typeof value === 'string') return hasher.h64('s' + value); // 's' is the one byte 0x73 in UTF-8
  if (typeof value === 'boolean') return value ? trueHash : falseHash;
  // V8 keeps a NaN's sign and payload when writing it out, so NaN gets the canonical bytes by hand.
  if (value !== value) return nanHash;
  numberView.setFloat64(1, value + 0, true); // `+ 0` turns −0 into 0
  return hasher.h64Raw(numberBytes);
}

/** σ and τ of Ertl's estimator (Algorithm 6): series summed until they stop changing. */
function sigma(x: number): number {
  if (x === 1) return Infinity;
  let y = 1;
  let z = x;
  for (;;) {
    x *= x;
    const previous = z;
    z += x * y;
    y += y;
    if (z === previous) return z;
  }
}

function tau(x: number): number {
  if (x === 0 || x === 1) return 0;
  let y = 1;
  let z = 1 - x;
  for (;;) {
    x = Math.sqrt(x);
    const previous = z;
    y *= 0.5;
    z -= (1 - x) ** 2 * y;
    if (z === previous) return z / 3;
  }
}

/** Sets the register of hash `h` (taken modulo 2^64) to its rho when that is larger. */
function addToRegisters(regs: Uint8Array, h: bigint): void {
  const hi = Number(BigInt.asUintN(32, h >> 32n));
  const lo = Number(BigInt.asUintN(32, h));
  const index = hi >>> (32 - P);
  const rest = hi & ((1 << (32 - P)) - 1);
  // rho = 1 + leading zeros of the Q remaining bits: 18 of them in `hi`, then 32 in `lo`.
  const rho = rest !== 0 ? Math.clz32(rest) - P + 1 : 32 - P + 1 + Math.clz32(lo);
  if (rho > regs[index]!) regs[index] = rho;
}

/**
 * Distinct hashes a sketch keeps exactly before it switches to registers. Most rollup states are
 * small (one series in one minute): as a set they count exactly (HyperLogLog misses 2 % now and then
 * at small counts) and cost a few bytes a value, where registers cost 16 KB to allocate, merge,
 * encode and estimate however few values they hold.
 */
export const EXACT_MAX = 256;

/**
 * Estimated count of distinct values, mergeable (merging sketches of parts gives exactly the sketch
 * of the whole, in any order) and encodable. Up to EXACT_MAX distinct hashes it holds them (an exact
 * count); past that, HyperLogLog registers (16 KB), to which the held hashes are added.
 */
export class DistinctSketch {
  private registers: Uint8Array | null = null;
  private exact: Set<bigint> | null = null;

  /** Counts a value, by its canonical hash. Needs `await loadHasher()` first. */
  add(value: string | number | boolean): void {
    this.addHash(hashValue(value));
  }

  /** Counts a value by a 64-bit hash the caller computed (taken modulo 2^64). */
  addHash(h: bigint): void {
    if (this.registers !== null) {
      addToRegisters(this.registers, h);
      return;
    }
    const set = (this.exact ??= new Set());
    set.add(BigInt.asUintN(64, h));
    if (set.size > EXACT_MAX) this.toRegisters();
  }

  /** Adds `o`'s values to this sketch; `o` is unchanged. */
  merge(o: DistinctSketch): void {
    if (o.registers !== null) {
      const regs = this.toRegisters();
      for (let i = 0; i < M; i++) if (o.registers[i]! > regs[i]!) regs[i] = o.registers[i]!;
    } else if (o.exact !== null) {
      for (const h of o.exact) this.addHash(h);
    }
  }

  private toRegisters(): Uint8Array {
    if (this.registers !== null) return this.registers;
    const regs = (this.registers = new Uint8Array(M));
    if (this.exact !== null) for (const h of this.exact) addToRegisters(regs, h);
    this.exact = null;
    return regs;
  }

  /** Estimated number of distinct values (a float, not rounded; exact while the hashes are held): 0 when empty. */
  estimate(): number {
    if (this.registers === null) return this.exact?.size ?? 0;
    const histogram = new Float64Array(MAX_RHO + 1);
    for (let i = 0; i < M; i++) histogram[this.registers[i]!]!++;
    let z = M * tau(1 - histogram[MAX_RHO]! / M);
    for (let k = Q; k >= 1; k--) z = 0.5 * (z + histogram[k]!);
    z += M * sigma(histogram[0]! / M);
    return (M / (2 * Math.LN2 * z)) * M;
  }

  /**
   * Binary form, version 1: [version][precision 14][form], then for the exact form (hashes held)
   * [uvarint n] and n ascending 64-bit hashes, little-endian; for the sparse form (registers, chosen
   * when shorter; also the empty sketch) [uvarint n] and n × [uvarint (index − previous index) · 64 +
   * register] in index order (previous starts at −1), or for the dense form 12,288 bytes of 6-bit
   * registers, four to three bytes.
   */
  encode(): Uint8Array {
    const w = new ByteWriter();
    w.byte(FORMAT_VERSION);
    w.byte(P);
    if (this.registers === null && this.exact !== null && this.exact.size > 0) {
      const hashes = this.exact.size === 1 ? this.exact : [...this.exact].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      w.byte(EXACT);
      w.uvarint(this.exact.size);
      for (const h of hashes) w.uint64(h);
      return w.finish();
    }
    const regs = this.registers;
    const sparse = new ByteWriter();
    let n = 0;
    let previous = -1;
    if (regs !== null) {
      for (let i = 0; i < M; i++) {
        if (regs[i] === 0) continue;
        sparse.uvarint((i - previous) * 64 + regs[i]!);
        previous = i;
        n++;
      }
    }
    const entries = sparse.finish();
    if (regs === null || entries.length + 3 < DENSE_BYTES) {
      w.byte(SPARSE);
      w.uvarint(n);
      w.raw(entries);
      return w.finish();
    }
    w.byte(DENSE);
    const packed = new Uint8Array(DENSE_BYTES);
    for (let i = 0, o = 0; i < M; i += 4, o += 3) {
      const bits = regs[i]! | (regs[i + 1]! << 6) | (regs[i + 2]! << 12) | (regs[i + 3]! << 18);
      packed[o] = bits & 0xff;
      packed[o + 1] = (bits >>> 8) & 0xff;
      packed[o + 2] = bits >>> 16;
    }
    w.raw(packed);
    return w.finish();
  }

  /** Reads `encode()`'s output; throws SketchDecodeError for unknown versions, truncation or bad contents. */
  static decode(bytes: Uint8Array): DistinctSketch {
    const r = new ByteReader(bytes, 'distinct sketch');
    const version = r.byte('format version');
    if (version !== FORMAT_VERSION) r.fail(`unknown format version ${version} (this build reads ${FORMAT_VERSION})`);
    const precision = r.byte('precision');
    if (precision !== P) r.fail(`precision ${precision} is not supported (only ${P})`);
    const form = r.byte('form');
    const s = new DistinctSketch();
    if (form === SPARSE) {
      const n = r.uvarint('register count');
      if (n > M) r.fail(`register count ${n} is above ${M}`);
      if (n > 0) s.registers = new Uint8Array(M);
      let index = -1;
      for (let k = 0; k < n; k++) {
        const entry = r.uvarint(`register ${k}`);
        const rho = entry % 64;
        index += (entry - rho) / 64;
        if (rho === 0 || rho > MAX_RHO) r.fail(`register ${k} value ${rho} is outside [1, ${MAX_RHO}]`);
        if (index >= M || entry < 64)
          r.fail(`register ${k} index ${index} is not above the previous one or past ${M - 1}`);
        s.registers![index] = rho;
      }
    } else if (form === EXACT) {
      const n = r.uvarint('hash count');
      if (n < 1 || n > EXACT_MAX) r.fail(`hash count ${n} is outside [1, ${EXACT_MAX}]`);
      const bytes = r.raw(8 * n, 'hashes');
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const set = (s.exact = new Set());
      let previous = -1n;
      for (let k = 0; k < n; k++) {
        const h = view.getBigUint64(8 * k, true);
        if (h <= previous) r.fail(`hash ${k} is not above the previous one`);
        set.add(h);
        previous = h;
      }
    } else if (form === DENSE) {
      const packed = r.raw(DENSE_BYTES, 'dense registers');
      const regs = (s.registers = new Uint8Array(M));
      for (let i = 0, o = 0; i < M; i += 4, o += 3) {
        const bits = packed[o]! | (packed[o + 1]! << 8) | (packed[o + 2]! << 16);
        for (let j = 0; j < 4; j++) {
          const rho = (bits >>> (6 * j)) & 63;
          if (rho > MAX_RHO) r.fail(`register ${i + j} value ${rho} is above ${MAX_RHO}`);
          regs[i + j] = rho;
        }
      }
    } else {
      r.fail(`unknown form ${form} (0 sparse, 1 dense, 2 exact)`);
    }
    r.end();
    return s;
  }
}

export { SketchDecodeError };
