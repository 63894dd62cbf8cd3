/**
 * Byte-level helpers shared by the sketches' binary encodings: unsigned LEB128 varints up to 2^53 − 1,
 * zigzag for signed integers, little-endian float64. Decoding failures throw `SketchDecodeError`
 * saying what was being read and where, so a caller can tell a bad blob from a bug by class.
 */

/** A sketch blob could not be decoded: unknown version, truncated, out of range or trailing bytes. */
export class SketchDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SketchDecodeError';
  }
}

/**
 * Scratch for float64 and uint64 conversions: a rollup pass encodes and decodes hundreds of
 * thousands of small states, and a DataView (or buffer) of their own per state was a tenth of the
 * cost, in allocation and garbage collection.
 */
const scratch = new DataView(new ArrayBuffer(8));
const scratchBytes = new Uint8Array(scratch.buffer);
/** Writers' buffers given back by `finish()`, reused by the next writer (encoders nest, so several). */
const pool: Uint8Array[] = [];
const POOLED_BYTES = 4096;
const POOL_MAX = 8;
const NONE = new Uint8Array(0);

/** Appends to a growing buffer; `finish()` returns exactly the bytes written (a copy; the buffer is reused). */
export class ByteWriter {
  private buf: Uint8Array = pool.pop() ?? new Uint8Array(POOLED_BYTES);
  private len = 0;

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.len + n));
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.len++] = b;
  }

  /** A non-negative safe integer. Arithmetic, not bit operators: counts may pass 2^32. */
  uvarint(n: number): void {
    this.room(8);
    while (n >= 0x80) {
      this.buf[this.len++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buf[this.len++] = n;
  }

  /** A safe integer of either sign: 0, −1, 1, −2 … map to 0, 1, 2, 3 … so small magnitudes stay short. */
  zigzag(n: number): void {
    this.uvarint(n >= 0 ? n * 2 : -n * 2 - 1);
  }

  float64(x: number): void {
    this.room(8);
    scratch.setFloat64(0, x, true);
    this.buf.set(scratchBytes, this.len);
    this.len += 8;
  }

  /** An unsigned 64-bit integer (taken modulo 2^64), little-endian. */
  uint64(x: bigint): void {
    this.room(8);
    scratch.setBigUint64(0, x, true);
    this.buf.set(scratchBytes, this.len);
    this.len += 8;
  }

  raw(bytes: Uint8Array): void {
    this.room(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
  }

  /** The bytes written, as a new array; the writer is spent (its buffer goes back to the pool). */
  finish(): Uint8Array {
    const out = this.buf.slice(0, this.len);
    if (this.buf.length === POOLED_BYTES && pool.length < POOL_MAX) pool.push(this.buf);
    this.buf = NONE;
    this.len = 0;
    return out;
  }
}

/** Reads what `ByteWriter` wrote; every read names its field in the error when input runs out. */
export class ByteReader {
  private pos = 0;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly what: string,
  ) {}

  fail(problem: string): never {
    throw new SketchDecodeError(`${this.what}: ${problem}`);
  }

  private need(n: number, field: string): void {
    if (this.pos + n > this.bytes.length) {
      this.fail(`truncated: ${field} needs ${n} byte(s) at offset ${this.pos} of ${this.bytes.length}`);
    }
  }

  byte(field: string): number {
    this.need(1, field);
    return this.bytes[this.pos++]!;
  }

  uvarint(field: string): number {
    let n = 0;
    let scale = 1;
    // 8 groups of 7 bits cover 2^53; a longer varint is not one we wrote.
    for (let i = 0; i < 8; i++) {
      const b = this.byte(field);
      n += (b & 0x7f) * scale;
      if (b < 0x80) {
        if (!Number.isSafeInteger(n)) this.fail(`${field} ${n} is past 2^53`);
        return n;
      }
      scale *= 0x80;
    }
    return this.fail(`${field}: varint longer than 8 bytes at offset ${this.pos}`);
  }

  zigzag(field: string): number {
    const z = this.uvarint(field);
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }

  float64(field: string): number {
    this.need(8, field);
    for (let i = 0; i < 8; i++) scratchBytes[i] = this.bytes[this.pos + i]!;
    this.pos += 8;
    return scratch.getFloat64(0, true);
  }

  raw(n: number, field: string): Uint8Array {
    this.need(n, field);
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** Trailing bytes mean the blob is not what we think it is: refuse rather than ignore them. */
  end(): void {
    if (this.pos !== this.bytes.length)
      this.fail(`${this.bytes.length - this.pos} trailing byte(s) at offset ${this.pos}`);
  }
}
