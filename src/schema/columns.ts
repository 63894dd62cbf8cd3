import {
  Bool,
  Dictionary,
  Field,
  Float64,
  Int32,
  Int64,
  makeData,
  makeVector,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimestampMillisecond,
  Utf8,
  vectorFromArray,
  type Vector,
} from 'apache-arrow';

/**
 * Arrow column builders over typed arrays. Collection files are built column by column from these,
 * never from row objects (on a 2-core machine a 1M-row table takes ~1.1 s from row objects and
 * ~2 ms from typed arrays). Each builder is sized for a known row count; variable-width data grows.
 */

const TWO_32 = 4294967296;

/** Writes the safe integer `v` as the `i`th 64-bit little-endian integer of `words` (two 32-bit halves, no BigInt). */
export function writeInt64(words: Int32Array, i: number, v: number): void {
  const hi = Math.floor(v / TWO_32);
  words[2 * i] = (v - hi * TWO_32) | 0;
  words[2 * i + 1] = hi | 0;
}

/** 64-bit integers written as two 32-bit halves (no BigInt per row). Also timestamps in ms. */
export class Int64Column {
  private readonly words: Int32Array;
  private readonly data: BigInt64Array;
  private n = 0;

  constructor(readonly rows: number) {
    this.data = new BigInt64Array(rows);
    this.words = new Int32Array(this.data.buffer);
  }

  /** Append an integer in the safe range (|v| < 2^53). */
  push(v: number): void {
    writeInt64(this.words, this.n++, v);
  }

  vector(): Vector {
    return makeVector(makeData({ type: new Int64(), length: this.n, data: this.data.subarray(0, this.n) }));
  }

  timestampVector(): Vector {
    return makeVector(
      makeData({ type: new TimestampMillisecond('UTC'), length: this.n, data: this.data.subarray(0, this.n) }),
    );
  }
}

export class Int32Column {
  private readonly data: Int32Array;
  private n = 0;
  constructor(rows: number) {
    this.data = new Int32Array(rows);
  }
  push(v: number): void {
    this.data[this.n++] = v;
  }
  vector(): Vector {
    return makeVector(makeData({ type: new Int32(), length: this.n, data: this.data.subarray(0, this.n) }));
  }
}

/** Validity bitmap shared by nullable builders; grows with its column. */
class Validity {
  bits: Uint8Array;
  nulls = 0;
  constructor(rows: number) {
    this.bits = new Uint8Array((rows + 7) >> 3);
  }
  set(i: number): void {
    this.bits[i >> 3]! |= 1 << (i & 7);
  }
  grow(rows: number): void {
    this.bits = grownBytes(this.bits, (rows + 7) >> 3);
  }
  /** The bitmap for the first `n` rows. */
  of(n: number): Uint8Array {
    return this.bits.subarray(0, (n + 7) >> 3);
  }
}

/** `a` copied into a zeroed array of `length` bytes. */
function grownBytes(a: Uint8Array, length: number): Uint8Array {
  const next = new Uint8Array(length);
  next.set(a);
  return next;
}

/** Capacity after `cap` is full: doubled (at least 64 rows). */
const nextCapacity = (cap: number) => Math.max(64, cap * 2);

/**
 * Nullable builders below are sized for an expected row count and grow past it (a caller that
 * cannot know the count up front, pipeline/speculative-fields.ts, pays only for the growth).
 */
export class Float64Column {
  private data: Float64Array;
  private readonly valid: Validity;
  private n = 0;
  constructor(rows: number) {
    this.data = new Float64Array(rows);
    this.valid = new Validity(rows);
  }
  private grow(): void {
    const cap = nextCapacity(this.data.length);
    const next = new Float64Array(cap);
    next.set(this.data);
    this.data = next;
    this.valid.grow(cap);
  }
  push(v: number): void {
    if (this.n === this.data.length) this.grow();
    this.valid.set(this.n);
    this.data[this.n++] = v;
  }
  pushNull(): void {
    if (this.n === this.data.length) this.grow();
    this.valid.nulls++;
    this.n++;
  }
  vector(): Vector {
    return makeVector(
      makeData({
        type: new Float64(),
        length: this.n,
        data: this.data.subarray(0, this.n),
        nullBitmap: this.valid.of(this.n),
        nullCount: this.valid.nulls,
      }),
    );
  }
}

export class BoolColumn {
  private data: Uint8Array;
  private readonly valid: Validity;
  private n = 0;
  private cap: number;
  constructor(rows: number) {
    this.cap = rows;
    this.data = new Uint8Array((rows + 7) >> 3);
    this.valid = new Validity(rows);
  }
  private grow(): void {
    this.cap = nextCapacity(this.cap);
    this.data = grownBytes(this.data, (this.cap + 7) >> 3);
    this.valid.grow(this.cap);
  }
  push(v: boolean): void {
    if (this.n === this.cap) this.grow();
    this.valid.set(this.n);
    if (v) this.data[this.n >> 3]! |= 1 << (this.n & 7);
    this.n++;
  }
  pushNull(): void {
    if (this.n === this.cap) this.grow();
    this.valid.nulls++;
    this.n++;
  }
  vector(): Vector {
    return makeVector(
      makeData({
        type: new Bool(),
        length: this.n,
        data: this.data.subarray(0, (this.n + 7) >> 3),
        nullBitmap: this.valid.of(this.n),
        nullCount: this.valid.nulls,
      }),
    );
  }
}

/** UTF-8 strings: offsets plus one growing byte buffer; bytes can be copied in without decoding. */
export class Utf8Column {
  protected offsets: Int32Array;
  protected bytes: Buffer;
  protected readonly valid: Validity;
  protected n = 0;
  protected used = 0;
  protected cap: number;

  /** `storage`: a buffer to write into (at least `byteHint` bytes), owned by the caller. */
  constructor(rows: number, byteHint = rows * 16, storage?: Buffer) {
    this.cap = Math.max(1, rows);
    this.offsets = new Int32Array(this.cap + 1);
    this.bytes =
      storage !== undefined && storage.length >= byteHint ? storage : Buffer.allocUnsafe(Math.max(64, byteHint));
    this.valid = new Validity(this.cap);
  }

  /** Room for one more row. */
  protected addRow(): void {
    if (this.n < this.cap) return;
    this.cap = nextCapacity(this.cap);
    const offsets = new Int32Array(this.cap + 1);
    offsets.set(this.offsets);
    this.offsets = offsets;
    this.valid.grow(this.cap);
  }

  /** Room for `extra` more bytes. */
  protected reserve(extra: number): void {
    if (this.used + extra <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < this.used + extra) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.bytes.copy(next, 0, 0, this.used);
    this.bytes = next;
  }

  /** Append bytes already UTF-8 (a record as it arrived). */
  pushBytes(src: Buffer, start: number, end: number): void {
    this.addRow();
    const len = end - start;
    this.reserve(len);
    // Short values are copied by hand (a native call costs more); Buffer#copy is a native memcpy
    // with no view object per row.
    if (len <= 24) {
      const dst = this.bytes;
      for (let i = 0, at = this.used; i < len; i++) dst[at + i] = src[start + i]!;
    } else src.copy(this.bytes, this.used, start, end);
    this.used += len;
    this.valid.set(this.n);
    this.offsets[++this.n] = this.used;
  }

  pushNull(): void {
    this.addRow();
    this.valid.nulls++;
    this.offsets[this.n + 1] = this.used;
    this.n++;
  }

  vector(): Vector {
    return makeVector(
      makeData({
        type: new Utf8(),
        length: this.n,
        valueOffsets: this.offsets.subarray(0, this.n + 1),
        data: new Uint8Array(this.bytes.buffer, this.bytes.byteOffset, this.used),
        nullBitmap: this.valid.of(this.n),
        nullCount: this.valid.nulls,
      }),
    );
  }
}

/** Values a StringColumn encodes at a time, and the most characters it lets wait. */
const FLUSH_VALUES = 1024;
const FLUSH_CHARS = 1 << 22;

/**
 * Strings that are JS strings already (field values from the parsed record): collected a block at
 * a time and encoded with one native UTF-8 write per block instead of one per value (per-value
 * Buffer#write dominated building typed columns). Byte offsets come from the string lengths when a
 * block is ASCII, else from each string's UTF-8 length. Blocks are small so the strings die young
 * (a column holding every string of a 50,000-row batch kept them alive through scavenges).
 */
export class StringColumn extends Utf8Column {
  private readonly pending: string[] = [];
  private pendingChars = 0;
  /** Rows whose offsets are written (the rest wait in `pending`). */
  private written = 0;

  constructor(rows: number) {
    super(rows, rows * 8);
  }

  push(s: string): void {
    this.addRow();
    this.valid.set(this.n++);
    this.wait(s);
  }

  override pushNull(): void {
    this.addRow();
    this.valid.nulls++;
    this.n++;
    this.wait('');
  }

  /** Append a value already UTF-8 (copied from a record's bytes): the waiting values go first. */
  override pushBytes(src: Buffer, start: number, end: number): void {
    this.flush();
    super.pushBytes(src, start, end);
    this.written = this.n;
  }

  private wait(s: string): void {
    this.pending.push(s);
    this.pendingChars += s.length;
    if (this.pending.length === FLUSH_VALUES || this.pendingChars > FLUSH_CHARS) this.flush();
  }

  /** Encode the waiting values after the bytes written so far. */
  private flush(): void {
    const values = this.pending;
    if (values.length === 0) return;
    const joined = values.join('');
    let byteLength = Buffer.byteLength(joined, 'utf8');
    let at = this.used;
    let row = this.written;
    if (byteLength === joined.length) {
      this.reserve(byteLength);
      this.bytes.write(joined, this.used, 'latin1');
      for (const v of values) this.offsets[++row] = at += v.length;
    } else {
      // Each value's own UTF-8 length: a value ending in a lone high surrogate joined to one
      // starting with a lone low surrogate would make a pair, not two replacement characters.
      let sum = 0;
      for (const v of values) sum += Buffer.byteLength(v, 'utf8');
      this.reserve(sum);
      if (sum === byteLength) this.bytes.write(joined, this.used, 'utf8');
      else for (let k = 0, to = this.used; k < values.length; k++) to += this.bytes.write(values[k]!, to, 'utf8');
      for (const v of values) this.offsets[++row] = at += Buffer.byteLength(v, 'utf8');
      byteLength = sum;
    }
    this.used += byteLength;
    this.written = row;
    values.length = 0;
    this.pendingChars = 0;
  }

  override vector(): Vector {
    this.flush();
    return super.vector();
  }
}

/** A few distinct strings repeated over many rows (version id, shape hash): dictionary-encoded. */
export class DictColumn {
  private readonly indices: Int32Array;
  private readonly values: string[] = [];
  private readonly index = new Map<string, number>();
  private readonly valid: Validity;
  private n = 0;

  /**
   * `id`: the dictionary id in the table's schema, unique within it. Fixed ids keep the schema of a
   * version's files the same file after file (parquet-writer.ts encodes each schema once); without
   * one, apache-arrow numbers every new dictionary type from a global counter.
   */
  constructor(
    rows: number,
    private readonly id?: number,
  ) {
    this.indices = new Int32Array(rows);
    this.valid = new Validity(rows);
  }

  push(v: string | null): void {
    this.pushIndex(this.indexOf(v));
  }

  /** Dictionary position of `v` (added if new), -1 for null: push it with `pushIndex`. */
  indexOf(v: string | null): number {
    if (v === null) return -1;
    let i = this.index.get(v);
    if (i === undefined) {
      i = this.values.length;
      this.values.push(v);
      this.index.set(v, i);
    }
    return i;
  }

  pushIndex(i: number): void {
    if (i < 0) {
      this.valid.nulls++;
      this.n++;
      return;
    }
    this.valid.set(this.n);
    this.indices[this.n++] = i;
  }

  vector(): Vector {
    const dictionary = vectorFromArray(this.values, new Utf8());
    return makeVector(
      makeData({
        type: new Dictionary(new Utf8(), new Int32(), this.id),
        length: this.n,
        data: this.indices.subarray(0, this.n),
        nullBitmap: this.valid.bits,
        nullCount: this.valid.nulls,
        dictionary,
      }),
    );
  }
}

/**
 * An Arrow table from named column vectors (all the same length, one chunk each). A column without
 * nulls is declared non-nullable, so Parquet stores it REQUIRED: no definition levels to encode
 * (measured: a noticeable share of the encode for ~20 columns of short values).
 */
export function tableOf(columns: Record<string, Vector>): Table {
  const names = Object.keys(columns);
  const vectors = names.map((n) => columns[n]!);
  const length = vectors.length > 0 ? vectors[0]!.length : 0;
  const fields = names.map((n, i) => new Field(n, vectors[i]!.type, vectors[i]!.nullCount > 0));
  const schema = new Schema(fields);
  const children = vectors.map((v) => v.data[0]!);
  const batch = new RecordBatch(schema, makeData({ type: new Struct(fields), length, nullCount: 0, children }));
  return new Table(schema, [batch]);
}
