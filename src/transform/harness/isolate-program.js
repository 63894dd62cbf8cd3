/*
 * The harness that runs in a view transform's isolate context, first, before the user's script:
 * it captures pristine builtins, removes the non-ECMAScript globals and evaluates to
 * `install(transform, progressBuffer, maxOutputChars)`. What `run` takes and answers is in
 * harness.ts. program-source.ts reads this file as text (HARNESS_SOURCE) and the isolate compiles
 * it as a classic script: it is never imported.
 *
 * The constants shared with harness.ts (LOC from SCRIPT_FILENAME, MAX_MSG, PROGRESS_SERIALIZING)
 * are written out here; program-source.ts refuses to load the program when they differ.
 */
// biome-ignore lint/complexity/useArrowFunction: the program is one classic-script function expression, called at once
(function () {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the isolate compiles this file as a classic script, not a module
  'use strict';
  const parse = JSON.parse,
    stringify = JSON.stringify,
    isArray = Array.isArray;
  const getProto = Object.getPrototypeOf,
    ObjProto = Object.prototype,
    I32 = Int32Array;
  const keys = Object.keys,
    create = Object.create;
  const toText = String,
    exec = RegExp.prototype.exec,
    apply = Reflect.apply,
    DateCtor = Date;
  // Builtin methods as plain functions: a script that rewrites String.prototype breaks only itself.
  const uncurry = Function.prototype.bind.bind(Function.prototype.call);
  const indexOf = uncurry(String.prototype.indexOf),
    slice = uncurry(String.prototype.slice);
  const toISO = uncurry(Date.prototype.toISOString);
  const push = uncurry(Array.prototype.push),
    join = uncurry(Array.prototype.join);
  const charCodeAt = uncurry(String.prototype.charCodeAt);
  const FunctionCtor = Function,
    isInteger = Number.isInteger,
    hasOwn = Object.hasOwn;
  const RS = '\u001e';
  const CHUNK = 128;
  // Column modes (see run): values in a Float64Array, in a Uint8Array, or converted to JSON.
  const F64 = 1,
    BOOL = 2,
    DICT = 3,
    GEN = 0;
  const F64A = Float64Array,
    U8A = Uint8Array,
    I32A = Int32Array,
    MapCtor = Map;
  const mapGet = uncurry(Map.prototype.get),
    mapSet = uncurry(Map.prototype.set);
  // A string column stays a dictionary while it has at most DICT_MIN distinct values, or at
  // most one per DICT_SHARE outputs (checked at each chunk).
  const DICT_MIN = 64,
    DICT_SHARE = 4;
  // Thrown (a harness value the script never sees) when a new string passes maxOutputChars.
  const CAP_PASSED = create(null);
  const TypedProto = getProto(Int8Array.prototype);
  const taSet = uncurry(TypedProto.set),
    taFill = uncurry(TypedProto.fill),
    taSlice = uncurry(TypedProto.slice);
  // What one typed value counts for against maxOutputChars.
  const TYPED_CHARS = 8;
  // Where an error of the user's script is: SCRIPT_FILENAME's line and column in a stack.
  const LOC = /view-transform\.js:(\d+):(\d+)/;
  const TOO_LONG = /string length/i;
  // MAX_ERROR_MESSAGE_CHARS.
  const MAX_MSG = 1000;
  // progress[0] while outputs are converted to JSON.
  const PROGRESS_SERIALIZING = -2;
  // Only the ECMAScript builtins stay: no WebAssembly, no shared memory (Atomics.wait could block).
  delete globalThis.WebAssembly;
  delete globalThis.SharedArrayBuffer;
  delete globalThis.Atomics;

  function describe(e) {
    let text;
    try {
      text =
        e !== null && typeof e === 'object' && typeof e.name === 'string' && typeof e.message === 'string'
          ? e.name + ': ' + e.message
          : toText(e);
    } catch (_) {
      text = 'a value that cannot be converted to text';
    }
    if (text.length > MAX_MSG) text = slice(text, 0, MAX_MSG) + '…';
    try {
      const stack = e !== null && typeof e === 'object' ? e.stack : undefined;
      const m = typeof stack === 'string' ? apply(exec, LOC, [stack]) : null;
      if (m !== null) text += ' (line ' + m[1] + ', column ' + m[2] + ')';
    } catch (_) {}
    return text;
  }
  function kind(v) {
    if (v === undefined) return 'undefined';
    if (v === null) return 'null';
    if (isArray(v)) return 'an array';
    const t = typeof v;
    if (t === 'object') {
      try {
        const c = getProto(v);
        const name = c !== null && typeof c.constructor === 'function' ? c.constructor.name : '';
        return name ? 'a ' + name + ' object' : 'an object that is not a plain object';
      } catch (_) {
        return 'an object that is not a plain object';
      }
    }
    return 'a ' + t;
  }
  function fail(r, i, m) {
    return 'e' + stringify({ r: r, i: i, m: m });
  }
  function isPlain(o) {
    if (typeof o !== 'object' || o === null) return false;
    const p = getProto(o);
    return p === ObjProto || p === null;
  }
  function badReturn(i, v) {
    return fail(
      'bad_output',
      i,
      'transform returned ' +
        kind(v) +
        ' for record ' +
        i +
        '; return a plain object, an array of plain objects, or null to skip the record',
    );
  }
  function range(n) {
    const a = new Array(n);
    for (let k = 0; k < n; k++) a[k] = k;
    return a;
  }
  // A chunk of outputs did not convert: find the first output that does not. base = index of
  // the chunk's first output among all outputs; item(k) = what output k converts as.
  function locate(count, item, src, base, whole) {
    for (let k = 0; k < count; k++) {
      const i = src === null ? base + k : src[base + k];
      try {
        stringify(item(k));
      } catch (e) {
        if (e instanceof RangeError && apply(exec, TOO_LONG, [toText(e.message)]) !== null)
          return fail('output_too_large', i, 'the output of record ' + i + ' is too large to convert to JSON');
        return fail('bad_output', i, 'the output of record ' + i + ' cannot be converted to JSON: ' + describe(e));
      }
    }
    return fail('output_too_large', null, 'the outputs of the batch cannot be converted to JSON: ' + describe(whole));
  }
  // Row r of the JSON columns' chunks, as one array (for naming the output that failed or passed the cap).
  function rowOf(cols, mode, r) {
    const a = [];
    for (let k = 0; k < cols.length; k++) if (mode[k] === GEN) push(a, cols[k][r]);
    return a;
  }

  // ctx times arrive as epoch ms; the script sees ISO-8601 strings. Date#toISOString costs ~0.5 µs;
  // a time in the same second as the one before is its "YYYY-MM-DDTHH:MM:SS" part joined to one of
  // the 1,000 ".fffZ" endings made once (one two-part string: 0.03 µs, against 0.2 µs for building
  // all 24 characters with String.fromCharCode; the same cost when kept and converted to JSON).
  const MS_ENDS = [];
  for (let f = 0; f < 1000; f++) push(MS_ENDS, '.' + (f < 100 ? (f < 10 ? '00' : '0') : '') + f + 'Z');
  // One cache per ctx time (received_at, timestamp): the two are often in different seconds.
  function isoCache() {
    let secStart = 0,
      secEnd = -1,
      secText = '';
    return function isoOf(ms) {
      if (ms >= secStart && ms < secEnd && ms % 1 === 0) return secText + MS_ENDS[ms - secStart];
      if (!(ms >= -8.64e15 && ms <= 8.64e15)) return null;
      const text = toISO(new DateCtor(ms));
      // Only years 0000–9999 have the 19-character "YYYY-MM-DDTHH:MM:SS" part.
      if (ms % 1 === 0 && text.length === 24) {
        const r = ms % 1000;
        secStart = ms - (r < 0 ? r + 1000 : r);
        secEnd = secStart + 1000;
        secText = slice(text, 0, 19);
      } else {
        secEnd = -1;
      }
      return text;
    };
  }

  // A string slot of a templated record: its contents at [p + a, p + end), or (a < 0) a string with
  // escapes, whose quoted text (at ~a − 1) JSON.parse reads.
  function slotString(t, p, ints, at) {
    const a = ints[at];
    return a >= 0 ? slice(t, p + a, p + ints[at + 1]) : parse(slice(t, p + ~a - 1, p + ints[at + 1] + 1));
  }
  // A shape's description (record-slots.ts) as { build(text, p, ints, o, nums, f), ints, nums };
  // throws on anything malformed.
  function factoryOf(desc) {
    // Own properties only: the script may have put any property on Object.prototype.
    const own = (x, key) => (hasOwn(x, key) ? x[key] : undefined);
    const d = parse(desc);
    const kinds = own(d, 'k'),
      tree = own(d, 't');
    if (
      typeof kinds !== 'string' ||
      typeof tree !== 'object' ||
      tree === null ||
      !isArray(own(tree, 'o')) ||
      hasOwn(tree, 'a')
    )
      throw new TypeError('not a record shape');
    const at = [];
    let ni = 1,
      nn = 0;
    for (let j = 0; j < kinds.length; j++) {
      const c = kinds[j];
      if (c === 's') {
        push(at, ni);
        ni += 2;
      } else if (c === 'n' || c === 'b') push(at, nn++);
      else throw new TypeError('unknown slot kind');
    }
    const used = new U8A(kinds.length);
    const code = (node, depth) => {
      if (node === null) return 'null';
      if (typeof node === 'number') {
        if (!isInteger(node) || node < 0 || node >= kinds.length || used[node] === 1) throw new TypeError('bad slot');
        used[node] = 1;
        const c = kinds[node];
        return c === 's'
          ? 'S(t,p,I,o+' + at[node] + ')'
          : c === 'n'
            ? 'F[f+' + at[node] + ']'
            : '(F[f+' + at[node] + ']!==0)';
      }
      if (typeof node !== 'object' || depth > 64) throw new TypeError('bad node');
      const parts = [],
        a = own(node, 'a'),
        members = own(node, 'o');
      if (isArray(a)) {
        for (let k = 0; k < a.length; k++) push(parts, code(a[k], depth + 1));
        return '[' + join(parts, ',') + ']';
      }
      if (!isArray(members)) throw new TypeError('bad node');
      for (let k = 0; k < members.length; k++) {
        const e = members[k];
        if (!isArray(e) || e.length !== 2 || typeof e[0] !== 'string') throw new TypeError('bad key');
        // A literal "__proto__": sets the prototype; computed, it is an own property (as JSON.parse makes it).
        push(parts, (e[0] === '__proto__' ? '["__proto__"]' : stringify(e[0])) + ':' + code(e[1], depth + 1));
      }
      return '{' + join(parts, ',') + '}';
    };
    const body = code(tree, 0);
    for (let j = 0; j < kinds.length; j++) if (used[j] !== 1) throw new TypeError('slot ' + j + ' unused');
    const make = new FunctionCtor('S', '"use strict"; return function (t, p, I, o, F, f) { return ' + body + '; };');
    return { build: make(slotString), ints: ni, nums: nn };
  }

  return function install(transform, progressBuffer, maxOutputChars) {
    const progress = new I32(progressBuffer);
    // Record factories of this context by shape id.
    const factories = new MapCtor();
    // One batch: records = their JSON texts joined by U+001E (which no JSON text holds raw); ctx
    // columns: view id, schema version(s) as JSON text, receivedAt/timestamp epoch ms per record.
    return function run(
      text,
      viewId,
      schemaVersionJson,
      svIndex,
      receivedAt,
      timestamps,
      fieldsJson,
      typesJson,
      tplIds,
      tplInts,
      tplNums,
      tplShapesJson,
    ) {
      try {
        const n = receivedAt.length;
        if (timestamps.length !== n) return 'xreceivedAt and timestamp differ in length';
        const tpl = tplIds !== undefined && tplIds !== null;
        if (tpl) {
          if (tplIds.length !== n) return 'xtemplate ids have ' + tplIds.length + ' entries for ' + n + ' records';
          if (typeof tplShapesJson === 'string') {
            try {
              const list = parse(tplShapesJson);
              if (!isArray(list)) throw new TypeError('not a list');
              for (let k = 0; k < list.length; k++) {
                const entry = list[k];
                if (
                  !isArray(entry) ||
                  entry.length !== 2 ||
                  typeof entry[0] !== 'number' ||
                  typeof entry[1] !== 'string'
                )
                  throw new TypeError('not [id, description]');
                mapSet(factories, entry[0], factoryOf(entry[1]));
              }
            } catch (e) {
              return 'xa record shape is malformed: ' + describe(e);
            }
          }
        }
        let sv,
          fields = null,
          types = null;
        try {
          sv = parse(schemaVersionJson);
          if (fieldsJson !== null) fields = parse(fieldsJson);
          // Absent (a caller of the harness that names no types) or null: every column as JSON.
          if (typeof typesJson === 'string') types = parse(typesJson);
        } catch (e) {
          return 'xschema version or fields are not JSON: ' + describe(e);
        }
        // svIndex: record i's version is sv[svIndex[i]] (one string per distinct version).
        const svPer = svIndex !== null;
        if (svPer) {
          if (!isArray(sv) || svIndex.length !== n)
            return 'xschemaVersion index has ' + svIndex.length + ' entries for ' + n + ' records';
          for (let k = 0; k < n; k++)
            if (!(svIndex[k] >= 0 && svIndex[k] < sv.length)) return 'xschemaVersion index out of range at ' + k;
        }
        // Declared fields: each output's values go to their columns as it is returned (no key
        // repeated per row, no object per row kept or rebuilt outside); keys outside them are
        // counted in extra. A number or date column holding only numbers (a date field also its
        // record's ctx times, as their epoch ms) fills a Float64Array (NaN: null, as JSON writes
        // NaN and ±Infinity), a boolean column a Uint8Array (2: null), a string column of few
        // distinct values an Int32Array of indexes into them; any other column — or one meeting a
        // value its array cannot hold, or a string column of many values — is converted to JSON a
        // chunk at a time.
        const nf = fields === null ? 0 : fields.length;
        const slot = create(null),
          extra = create(null);
        for (let k = 0; k < nf; k++) slot[fields[k]] = k;
        const mode = [],
          isDate = [],
          cols = [],
          colParts = [],
          dicts = [],
          dictValues = [];
        for (let k = 0; k < nf; k++) {
          const t = types !== null && isArray(types) ? types[k] : null;
          push(isDate, t === 'date');
          push(mode, t === 'number' || t === 'date' ? F64 : t === 'boolean' ? BOOL : t === 'string' ? DICT : GEN);
          // GEN: the chunk's values; F64/BOOL: all the call's values (grown as outputs come);
          // DICT: each output's index into the column's distinct strings (-1: null).
          push(cols, []);
          push(colParts, []);
          push(dicts, t === 'string' ? new MapCtor() : null);
          push(dictValues, []);
        }
        let nTyped = 0;
        for (let k = 0; k < nf; k++) if (mode[k] !== GEN) nTyped++;
        let cap = 0;
        const grow = () => {
          // biome-ignore lint/complexity/useMathMinMax: the user's script may have replaced Math.max
          const next = cap === 0 ? (n > 16 ? n : 16) : 2 * cap;
          for (let k = 0; k < nf; k++) {
            if (mode[k] === GEN) continue;
            const a = mode[k] === F64 ? new F64A(next) : mode[k] === BOOL ? new U8A(next) : new I32A(next);
            if (cap > 0) taSet(a, cols[k]);
            taFill(a, mode[k] === F64 ? NaN : mode[k] === BOOL ? 2 : -1, cap);
            cols[k] = a;
          }
          cap = next;
        };
        // Outputs so far (m), of which the first (done) are converted; without fields the
        // chunk's output objects are kept in (out) and converted to JSON rows.
        let out = [],
          m = 0,
          done = 0,
          chars = 0,
          dictChars = 0;
        const parts = [];
        // Record index of each output; null while output k came from record k.
        let src = null;
        // A typed column met a value its array cannot hold: its values so far go to JSON (the
        // converted ones as one part, the chunk's as raw values) and it goes on as JSON.
        const toJson = (k) => {
          const a = cols[k],
            md = mode[k],
            list = dictValues[k];
          const value = (r) =>
            md === F64
              ? a[r] === a[r]
                ? a[r]
                : null
              : md === BOOL
                ? a[r] === 2
                  ? null
                  : a[r] === 1
                : a[r] < 0
                  ? null
                  : list[a[r]];
          if (done > 0) {
            const old = new Array(done);
            for (let r = 0; r < done; r++) old[r] = value(r);
            const t = stringify(old);
            push(colParts[k], slice(t, 1, t.length - 1));
          }
          const c = [];
          for (let r = done; r < m; r++) c[r - done] = value(r);
          cols[k] = c;
          mode[k] = GEN;
          dicts[k] = null;
          dictValues[k] = [];
          nTyped--;
        };
        // Output m's value of column k (record i, whose ctx times are tIso/rIso).
        const put = (k, v, i, tIso, rIso) => {
          const md = mode[k];
          if (md === F64) {
            if (typeof v === 'number') {
              // JSON: NaN and ±Infinity are null, -0 is 0.
              if (v - v === 0) cols[k][m] = v === 0 ? 0 : v;
              return;
            }
            if (v === undefined || v === null) return;
            if (isDate[k] && typeof v === 'string') {
              // A date field's value that is its record's ctx.timestamp or ctx.received_at, as
              // the script got it, goes as those epoch ms: what the worker would read the string
              // back as (an integer time's 24-character ISO string, years 0000–9999).
              if (v === tIso && v.length === 24 && timestamps[i] % 1 === 0) {
                cols[k][m] = timestamps[i];
                return;
              }
              if (v === rIso && v.length === 24 && receivedAt[i] % 1 === 0) {
                cols[k][m] = receivedAt[i];
                return;
              }
            }
          } else if (md === BOOL) {
            if (typeof v === 'boolean') {
              cols[k][m] = v ? 1 : 0;
              return;
            }
            if (v === undefined || v === null) return;
          } else if (md === DICT) {
            if (typeof v === 'string') {
              const d = dicts[k];
              let at = mapGet(d, v);
              if (at === undefined) {
                // A new string counts its length against the cap now (a repeat costs nothing).
                dictChars += v.length + 3;
                if (chars + dictChars > maxOutputChars) throw CAP_PASSED;
                at = dictValues[k].length;
                push(dictValues[k], v);
                mapSet(d, v, at);
              }
              cols[k][m] = at;
              return;
            }
            if (v === undefined || v === null) return;
          }
          if (md !== GEN) toJson(k);
          // A string longer than the room left under the cap passes it whatever else is output: said
          // now, before JSON.stringify copies it (V8 12, Node 22, takes seconds over a 100 MB string
          // and the batch would end as a timeout).
          if (typeof v === 'string' && v.length > maxOutputChars - chars) throw CAP_PASSED;
          cols[k][m - done] = v;
        };
        // The chunk's outputs as texts to append: [rows JSON] or one [column JSON] per JSON column.
        const chunkTexts = () => {
          if (nf === 0) {
            try {
              return [stringify(out)];
            } catch (e) {
              return locate(out.length, (k) => out[k], src, done, e);
            }
          }
          const rows = m - done;
          const texts = [];
          try {
            for (let k = 0; k < nf; k++) {
              if (mode[k] !== GEN) continue;
              // Holes (outputs without the key) convert as null.
              cols[k].length = rows;
              push(texts, stringify(cols[k]));
            }
          } catch (e) {
            return locate(rows, (r) => rowOf(cols, mode, r), src, done, e);
          }
          return texts;
        };
        const flush = (i) => {
          progress[1] = src === null ? done : src[done];
          progress[2] = i;
          progress[0] = PROGRESS_SERIALIZING;
          const rows = nf === 0 ? out.length : m - done;
          // A string column with many distinct values goes on as JSON.
          for (let k = 0; k < nf; k++)
            if (mode[k] === DICT && dictValues[k].length > DICT_MIN && dictValues[k].length * DICT_SHARE > m) toJson(k);
          const texts = chunkTexts();
          if (typeof texts === 'string') return texts;
          // A typed value counts as TYPED_CHARS characters of JSON.
          let size = rows * nTyped * TYPED_CHARS + dictChars;
          dictChars = 0;
          for (let k = 0; k < texts.length; k++) size += texts[k].length - 1;
          if (chars + size > maxOutputChars) {
            // Name the record whose output passes the cap. The chunk's texts are let go first, and a
            // chunk of one output is not converted again: a second and third copy of one huge output
            // (a 100 MB string) pass the isolate's memory limit, and V8 12 (Node 22) spends the time
            // limit collecting garbage before it gives up (`timeout` instead of this answer).
            texts.length = 0;
            let at = rows === 1 ? (src === null ? done : src[done]) : i;
            for (let k = 0, total = chars; rows > 1 && k < rows; k++) {
              total +=
                (nf === 0 ? stringify(out[k]).length : stringify(rowOf(cols, mode, k)).length + nTyped * TYPED_CHARS) +
                1;
              if (total > maxOutputChars) {
                at = src === null ? done + k : src[done + k];
                break;
              }
            }
            return fail(
              'output_too_large',
              at,
              'the outputs of the batch exceed ' + maxOutputChars + ' characters of JSON at record ' + at,
            );
          }
          chars += size;
          if (nf === 0) {
            push(parts, slice(texts[0], 1, texts[0].length - 1));
            out = [];
          } else {
            for (let k = 0, q = 0; k < nf; k++) {
              if (mode[k] !== GEN) continue;
              push(colParts[k], slice(texts[q], 1, texts[q].length - 1));
              q++;
              cols[k] = [];
            }
          }
          done += rows;
          return null;
        };
        // One output of record i: kept as it is (no fields) or spread over the columns.
        const emit = (o, i, tIso, rIso) => {
          if (nf === 0) {
            // As in put: a top-level string longer than the room left under the cap fails the batch
            // before JSON.stringify copies it.
            // (A getter that throws is left for JSON.stringify to report, with the record.)
            let huge = false;
            try {
              const ks = keys(o);
              for (let q = 0; q < ks.length && !huge; q++) {
                const v = o[ks[q]];
                huge = typeof v === 'string' && v.length > maxOutputChars - chars;
              }
            } catch (_) {}
            if (huge)
              return fail(
                'output_too_large',
                i,
                'the outputs of the batch exceed ' + maxOutputChars + ' characters of JSON at record ' + i,
              );
            push(out, o);
            m++;
            return null;
          }
          if (m === cap) grow();
          try {
            // Object.keys: the own enumerable keys, the ones JSON.stringify would write.
            const ks = keys(o);
            for (let q = 0; q < ks.length; q++) {
              const key = ks[q],
                v = o[key],
                k = slot[key];
              if (k === undefined) {
                if (v !== undefined && typeof v !== 'function' && typeof v !== 'symbol')
                  extra[key] = (extra[key] || 0) + 1;
                continue;
              }
              put(k, v, i, tIso, rIso);
            }
          } catch (e) {
            if (e === CAP_PASSED)
              return fail(
                'output_too_large',
                i,
                'the outputs of the batch exceed ' + maxOutputChars + ' characters of JSON at record ' + i,
              );
            return fail('bad_output', i, 'the output of record ' + i + ' cannot be converted to JSON: ' + describe(e));
          }
          m++;
          return null;
        };
        const len = text.length;
        let p = 0,
          i = 0;
        let lastR = NaN,
          lastT = NaN,
          receivedIso = null,
          timestampIso = null;
        const receivedIsoOf = isoCache(),
          timestampIsoOf = isoCache();
        // Where the next templated record's values start.
        let o = 0,
          f = 0;
        while (p < len) {
          if (i === n) return 'xthe records text holds more than the ' + n + ' records of the ctx';
          progress[0] = i;
          const id = tpl ? tplIds[i] : -1;
          let e, record;
          if (id < 0) {
            e = indexOf(text, RS, p);
            if (e < 0) e = len;
            try {
              record = parse(slice(text, p, e));
            } catch (err) {
              return 'xrecord ' + i + ' is not JSON: ' + describe(err);
            }
          } else {
            const fac = mapGet(factories, id);
            if (fac === undefined) return 'xrecord ' + i + ' has shape ' + id + ', which was not described';
            e = p + tplInts[o];
            if (
              !(e <= len && (e === len || charCodeAt(text, e) === 0x1e)) ||
              o + fac.ints > tplInts.length ||
              f + fac.nums > tplNums.length
            )
              return 'xthe template values of record ' + i + ' do not fit the records text';
            record = fac.build(text, p, tplInts, o, tplNums, f);
            o += fac.ints;
            f += fac.nums;
          }
          p = e + 1;
          // The records of one request share their receive time: its ISO string is made once.
          const rms = receivedAt[i],
            tms = timestamps[i];
          if (rms !== lastR) receivedIso = receivedIsoOf((lastR = rms));
          if (tms !== lastT) timestampIso = timestampIsoOf((lastT = tms));
          const ctx = {
            view_id: viewId,
            schema_version: svPer ? sv[svIndex[i]] : sv,
            received_at: receivedIso,
            timestamp: timestampIso,
          };
          let r;
          try {
            r = transform(record, ctx);
          } catch (err) {
            return fail('threw', i, 'transform threw on record ' + i + ': ' + describe(err));
          }
          if (typeof r !== 'object') return badReturn(i, r);
          if (r === null) {
            if (src === null) src = range(m);
          } else if (isArray(r)) {
            if (src === null) src = range(m);
            for (let k = 0; k < r.length; k++) {
              const o = r[k];
              if (!isPlain(o))
                return fail(
                  'bad_output',
                  i,
                  'transform returned an array holding ' +
                    kind(o) +
                    ' at position ' +
                    k +
                    ' for record ' +
                    i +
                    '; each element must be a plain object',
                );
              const failed = emit(o, i, timestampIso, receivedIso);
              if (failed !== null) return failed;
              push(src, i);
            }
          } else {
            const proto = getProto(r);
            if (proto !== ObjProto && proto !== null) return badReturn(i, r);
            const failed = emit(r, i, timestampIso, receivedIso);
            if (failed !== null) return failed;
            if (src !== null) push(src, i);
          }
          if (m - done >= CHUNK) {
            const failed = flush(i);
            if (failed !== null) return failed;
          }
          i++;
        }
        if (i !== n) return 'xthe records text holds ' + i + ' records, the ctx ' + n;
        if (tpl && (o !== tplInts.length || f !== tplNums.length))
          return 'xthe template values do not match the templated records';
        if (m > done) {
          const failed = flush(n - 1);
          if (failed !== null) return failed;
        }
        const head = src === null ? '' : stringify(src);
        if (nf === 0) return 'o' + head + '\n[' + join(parts, ',') + ']';
        const columns = [];
        for (let k = 0; k < nf; k++) {
          if (mode[k] === GEN) push(columns, '[' + join(colParts[k], ',') + ']');
          else {
            // No output yet grew the typed columns.
            const a =
              cap === 0
                ? mode[k] === F64
                  ? new F64A(0)
                  : mode[k] === BOOL
                    ? new U8A(0)
                    : new I32A(0)
                : taSlice(cols[k], 0, m);
            push(columns, mode[k] === DICT ? { strings: stringify(dictValues[k]), index: a } : a);
          }
        }
        return { src: head, extra: stringify(extra), columns: columns };
      } catch (e) {
        // The harness itself failed (e.g. stack exhausted while describing an error).
        return fail('threw', null, 'transform failed: ' + describe(e));
      }
    };
  };
})();
