/**
 * Fast non-cryptographic hashing for shape fingerprints: two independent 32-bit lanes (64 bits in
 * all). Lane A is FNV-1a, lane B a multiply-xorshift; both end with murmur3's finaliser so that
 * small input differences spread over every bit, which the order-independent sum in
 * fingerprint.ts relies on.
 */

/** murmur3 fmix32. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Lane A of a string (FNV-1a over UTF-16 code units, finalised). */
export function hashStringA(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return fmix32(h ^ s.length);
}

/** Lane B of a string (multiply-xorshift over UTF-16 code units, finalised). */
export function hashStringB(s: string): number {
  let h = 0x9747b28c;
  for (let i = 0; i < s.length; i++) {
    h = Math.imul(h ^ s.charCodeAt(i), 0x5bd1e995);
    h ^= h >>> 15;
  }
  return fmix32(h + s.length);
}

/** Combine a parent lane value with a child lane value (order-dependent: a path, not a set). */
export function mixA(parent: number, child: number): number {
  return fmix32(Math.imul(parent ^ 0x27d4eb2f, 0x165667b1) + child);
}

export function mixB(parent: number, child: number): number {
  return fmix32(Math.imul(parent + 0x61c88647, 0x27d4eb2d) ^ child);
}

/** 16 lowercase hex digits for a (lane A, lane B) pair — the form shown in the API. */
export function hashHex(a: number, b: number): string {
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

/**
 * A 53-bit integer key from both lanes, exact in a JS number: used as a Map key on the hot path
 * (a number key avoids building a string per record).
 */
export function hashKey(a: number, b: number): number {
  return (a >>> 0) * 2097152 + ((b >>> 0) >>> 11);
}
