import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Field, Float64, List, Table, tableFromIPC, tableToIPC, vectorFromArray, type Vector } from 'apache-arrow';
import { readParquet, Table as WasmTable } from 'parquet-wasm/node';
import {
  BoolColumn,
  DictColumn,
  Float64Column,
  Int32Column,
  Int64Column,
  StringColumn,
  tableOf,
  Utf8Column,
} from '../../src/schema/columns.js';
import { encodeParquet, streamOf } from '../../src/schema/parquet-writer.js';

/** A table shaped like a collection file: envelope columns (two dictionaries), typed fields with and without nulls. */
function fileTable(rows: number, seed: number, opts: { nullsIn?: string } = {}): Table {
  const seq = new Int64Column(rows);
  const ord = new Int32Column(rows);
  const version = new DictColumn(rows, 0);
  const shape = new DictColumn(rows, 1);
  const doc = new Utf8Column(rows);
  const num = new Float64Column(rows);
  const flag = new BoolColumn(rows);
  const text = new StringColumn(rows);
  for (let i = 0; i < rows; i++) {
    seq.push(seed * 1000 + i);
    ord.push(i);
    version.push(i % 3 === 0 ? null : `sch_${seed}_${i % 2}`);
    shape.push(`shape_${i % 4}`);
    doc.pushBytes(
      Buffer.from(JSON.stringify({ i, s: seed, t: 'é…' })),
      0,
      Buffer.byteLength(JSON.stringify({ i, s: seed, t: 'é…' })),
    );
    if (opts.nullsIn === 'num' && i % 2 === 1) num.pushNull();
    else num.push(i * 1.5 + seed);
    flag.push(i % 2 === 0);
    if (opts.nullsIn === 'text' && i % 5 === 0) text.pushNull();
    else text.push(`v${i}${'x'.repeat(i % 7)}`);
  }
  const columns: Record<string, Vector> = {
    _sluice_seq: seq.vector(),
    _sluice_row: ord.vector(),
    _sluice_received_at: seq.timestampVector(),
    _sluice_version: version.vector(),
    _sluice_shape: shape.vector(),
    _sluice_doc: doc.vector(),
    'a.num': num.vector(),
    flag: flag.vector(),
    text: text.vector(),
  };
  return tableOf(columns);
}

const rowsOf = (t: Table) =>
  t.toArray().map((r) => JSON.stringify(r.toJSON(), (_k, v) => (typeof v === 'bigint' ? String(v) : v)));

test("streamOf's stream reads back as the table, schema and values, with apache-arrow's own reader", () => {
  for (const [rows, seed, nullsIn] of [
    [37, 1, undefined],
    [1, 2, 'num'],
    [1030, 3, 'text'],
    [37, 4, undefined],
  ] as const) {
    const t = fileTable(rows, seed, nullsIn ? { nullsIn } : {});
    const back = tableFromIPC(streamOf(t).slice());
    assert.deepEqual(
      back.schema.fields.map((f) => [f.name, String(f.type), f.nullable]),
      t.schema.fields.map((f) => [f.name, String(f.type), f.nullable]),
    );
    assert.deepEqual(rowsOf(back), rowsOf(t));
    // The same rows as apache-arrow's writer would give.
    assert.deepEqual(rowsOf(back), rowsOf(tableFromIPC(tableToIPC(t, 'stream'))));
  }
});

test("streamOf's stream reads back in parquet-wasm (arrow-rs checks every message) as the table", () => {
  for (const [rows, seed, nullsIn] of [
    [0, 8, undefined],
    [1, 9, 'num'],
    [37, 10, 'text'],
    [1030, 11, 'num'],
  ] as const) {
    const t = fileTable(rows, seed, nullsIn ? { nullsIn } : {});
    const fromOurs = WasmTable.fromIPCStream(streamOf(t)).intoIPCStream();
    const back = tableFromIPC(fromOurs);
    assert.equal(back.numRows, rows);
    assert.deepEqual(rowsOf(back), rowsOf(t));
    // arrow-rs decodes the same table (schema, nullability, dictionaries, buffers) as from apache-arrow's own writer.
    assert.deepEqual(
      Buffer.from(fromOurs),
      Buffer.from(WasmTable.fromIPCStream(tableToIPC(t, 'stream')).intoIPCStream()),
    );
  }
});

test('columns streamOf does not lay out itself (nested types, sliced data) go through apache-arrow, with the same result', () => {
  const nested = new Table({
    n: vectorFromArray([1, 2, 3], new Float64()),
    list: vectorFromArray([[1], [2, 3], []], new List(new Field('item', new Float64(), true))),
  });
  const sliced = fileTable(40, 12, { nullsIn: 'text' }).slice(3, 30);
  for (const t of [nested, sliced]) {
    assert.deepEqual(rowsOf(tableFromIPC(streamOf(t).slice())), rowsOf(t));
    assert.deepEqual(rowsOf(tableFromIPC(WasmTable.fromIPCStream(streamOf(t)).intoIPCStream())), rowsOf(t));
  }
});

test('a schema seen before with other nullability is not confused with it (the cached schema message is keyed by it)', () => {
  const withNulls = fileTable(20, 5, { nullsIn: 'num' });
  const without = fileTable(20, 6);
  assert.equal(withNulls.schema.fields.find((f) => f.name === 'a.num')!.nullable, true);
  assert.equal(without.schema.fields.find((f) => f.name === 'a.num')!.nullable, false);
  for (const t of [withNulls, without, withNulls, without]) {
    const back = tableFromIPC(streamOf(t).slice());
    assert.equal(
      back.schema.fields.find((f) => f.name === 'a.num')!.nullable,
      t.schema.fields.find((f) => f.name === 'a.num')!.nullable,
    );
    assert.deepEqual(rowsOf(back), rowsOf(t));
  }
});

test('encodeParquet writes files parquet-wasm reads back with every value (documents zstd, the rest LZ4)', () => {
  const t = fileTable(500, 7, { nullsIn: 'text' });
  const bytes = encodeParquet(t);
  const back = tableFromIPC(readParquet(bytes).intoIPCStream());
  assert.equal(back.numRows, 500);
  const names = t.schema.fields.map((f) => f.name);
  const plain = (x: Table) =>
    x.toArray().map((r) =>
      names.map((n) => {
        const v = r.toJSON()[n];
        return typeof v === 'bigint' ? String(v) : v instanceof Date ? v.getTime() : v;
      }),
    );
  assert.deepEqual(plain(back), plain(t));
});
