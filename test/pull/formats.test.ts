import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBody, sniffFormat, formatOfContentType } from '../../src/pull/formats/parse-body.js';
import { FormatError } from '../../src/pull/formats/format-error.js';
import { metricsRecords } from '../../src/pull/formats/metrics-text.js';
import { mergeTargetLabels, sdTargets, targetUrl } from '../../src/pull/formats/http-sd.js';

function records(text: string, ct?: string, path: string | null = null) {
  const p = parseBody(text, ct, path);
  assert.equal(p.kind, 'records');
  return p.kind === 'records' ? p.records : [];
}

function failsAt(fn: () => unknown, line: number | null, column: number | null, reason?: RegExp) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof FormatError, `not a FormatError: ${String(err)}`);
    assert.equal(err.line, line, err.message);
    if (column !== null) assert.equal(err.column, column, err.message);
    if (reason) assert.match(err.message, reason);
    return true;
  });
}

test('json: object, array of objects, records path to a list or an object', () => {
  assert.deepEqual(records('{"a":1}', 'application/json'), [{ a: 1 }]);
  assert.deepEqual(records('[{"a":1},{"a":2}]', 'application/json'), [{ a: 1 }, { a: 2 }]);
  assert.deepEqual(records('{"data":{"items":[{"x":1},{"x":2}]}}', 'application/json', 'data.items'), [
    { x: 1 },
    { x: 2 },
  ]);
  assert.deepEqual(records('{"data":{"one":{"x":1}}}', 'application/json', 'data.one'), [{ x: 1 }]);
  // Keys containing characters other than dots are plain keys.
  assert.deepEqual(records('{"we-ird key":[{"x":1}]}', 'application/json', 'we-ird key'), [{ x: 1 }]);
});

test('json: malformed bodies and paths fail with the position or the path', () => {
  failsAt(() => parseBody('{\n  "a": 1,\n  "b": }', 'application/json', null), 3, 8, /unexpected character/);
  failsAt(() => parseBody('{"a": [1, 2', 'application/json', null), 1, 12, /end of input/);
  failsAt(() => parseBody('{"a":1} x', 'application/json', null), 1, 9, /after the JSON value/);
  failsAt(() => parseBody('{"data":{}}', 'application/json', 'data.items'), null, null, /has no key "items"/);
  failsAt(() => parseBody('{"data":{"items":3}}', 'application/json', 'data.items'), null, null, /number, not a list/);
  failsAt(() => parseBody('{"data":[1]}', 'application/json', 'data'), null, null, /element 0 of "data" is a number/);
  failsAt(() => parseBody('"text"', 'application/json', null), null, null, /not an object or an array/);
  failsAt(() => parseBody('{"data":[[1]]}', 'application/json', 'data.0'), null, null, /is not an object/);
});

test('jsonl: one object per line, blank lines skipped, errors name the line', () => {
  assert.deepEqual(records('{"a":1}\n\n{"a":2}\r\n', 'application/x-ndjson'), [{ a: 1 }, { a: 2 }]);
  assert.deepEqual(records('{"a":1}\n{"a":2}\n'), [{ a: 1 }, { a: 2 }]);
  failsAt(() => parseBody('{"a":1}\n{"a":2,}\n', 'application/x-ndjson', null), 2, 8);
  failsAt(() => parseBody('{"a":1}\n[1]\n', 'application/x-ndjson', null), 2, 1, /not a JSON object/);
  // Truncated mid-line.
  failsAt(() => parseBody('{"a":1}\n{"a":', 'application/x-ndjson', null), 2, 6);
});

test('csv and tsv: header row, quoting, embedded newlines, BOM, values stay strings', () => {
  assert.deepEqual(records('\ufeffname,count\n"Smith, J",1\n"multi\nline",002\n', 'text/csv'), [
    { name: 'Smith, J', count: '1' },
    { name: 'multi\nline', count: '002' },
  ]);
  assert.deepEqual(records('a\tb\nx"y\t2\n', 'text/tab-separated-values'), [{ a: 'x"y', b: '2' }]);
  assert.deepEqual(records('host,value\nh1,3\n'), [{ host: 'h1', value: '3' }]);
  failsAt(() => parseBody('a,b\n1,2\n3,4,5\n', 'text/csv', null), 3, null, /columns length/i);
  failsAt(() => parseBody('a,b\n1,"2\n', 'text/csv', null), 2, null, /quote/i);
  failsAt(() => parseBody('a,a\n1,2\n', 'text/csv', null), 1, 2, /twice/);
});

const PROM = `# HELP http_requests_total The total number of HTTP requests.
# TYPE http_requests_total counter
http_requests_total{method="post",code="200"} 1027 1395066363000
http_requests_total{method="post",code="400"}    3 1395066363000

# Escaping in label values:
msdos_file_access_time_seconds{path="C:\\\\DIR\\\\FILE.TXT",error="Cannot find file:\\n\\"FILE.TXT\\""} 1.458255915e9

metric_without_timestamp_and_labels 12.47
something_weird{problem="division by zero"} +Inf -3982045
nan_metric NaN
# HELP http_request_duration_seconds A histogram of the request duration.
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{le="0.05"} 24054
http_request_duration_seconds_bucket{le="+Inf"} 144320
http_request_duration_seconds_sum 53423
http_request_duration_seconds_count 144320
# TYPE rpc_duration_seconds summary
rpc_duration_seconds{quantile="0.5"} 4773
rpc_duration_seconds_sum 1.7560473e+07
rpc_duration_seconds_count 2693
`;

test('prometheus 0.0.4: HELP/TYPE, escapes, NaN/±Inf, ms timestamps, one record per histogram and summary sample', () => {
  const r = records(PROM, 'text/plain; version=0.0.4; charset=utf-8') as any[];
  assert.equal(r.length, 13);
  assert.deepEqual(r[0], {
    name: 'http_requests_total',
    family: 'http_requests_total',
    type: 'counter',
    help: 'The total number of HTTP requests.',
    labels: { method: 'post', code: '200' },
    value: 1027,
    timestamp: 1395066363000,
  });
  assert.deepEqual(r[2].labels, { path: 'C:\\DIR\\FILE.TXT', error: 'Cannot find file:\n"FILE.TXT"' });
  assert.equal(r[3].type, 'untyped');
  assert.equal(r[4].value, '+Inf');
  assert.equal(r[4].timestamp, -3982045);
  assert.equal(r[5].value, 'NaN');
  assert.deepEqual(
    [r[6].name, r[6].family, r[6].type, r[6].labels.le],
    ['http_request_duration_seconds_bucket', 'http_request_duration_seconds', 'histogram', '0.05'],
  );
  assert.deepEqual(
    [r[9].name, r[9].family, r[9].value],
    ['http_request_duration_seconds_count', 'http_request_duration_seconds', 144320],
  );
  assert.deepEqual([r[10].type, r[10].labels.quantile], ['summary', '0.5']);
  assert.equal(sniffFormat(PROM), 'prometheus');
});

test('prometheus: malformed lines fail with line and column', () => {
  const cases: Array<[string, number, number, RegExp]> = [
    ['a 1\nb{x="1} 2\n', 2, 10, /unterminated value/],
    ['a 1\nb{x=1} 2\n', 2, 5, /double quotes/],
    ['a{x="\\q"} 1\n', 1, 6, /invalid escape/],
    ['a abc\n', 1, 3, /not a number/],
    ['a 1 1.5\n', 1, 5, /integer of milliseconds/],
    ['a\n', 1, 2, /no value/],
    ['a{x="1",x="2"} 1\n', 1, 9, /twice/],
    ['a 1\n# TYPE a gauge\n', 2, 1, /after its samples/],
    ['# TYPE a sideways\n', 1, 10, /unknown metric type/],
    ['1a 3\n', 1, 1, /metric name/],
    ['a 1 2 3\n', 1, 7, /unexpected content/],
  ];
  for (const [text, line, col, reason] of cases) failsAt(() => metricsRecords(text, 'prometheus'), line, col, reason);
});

const OM = `# TYPE acme_http_router_request_seconds summary
# UNIT acme_http_router_request_seconds seconds
# HELP acme_http_router_request_seconds Latency though all of ACME's HTTP request router.
acme_http_router_request_seconds_sum{path="/api/v1",method="GET"} 9036.32
acme_http_router_request_seconds_count{path="/api/v1",method="GET"} 807283.0
# TYPE foo histogram
foo_bucket{le="0.01"} 0
foo_bucket{le="+Inf"} 17 # {trace_id="KOO5S4vxi0o"} 0.67 1520879607.789
foo_count 17
foo_sum 324789.3 1520879607.5
# EOF
`;

test('openmetrics 1.0: # EOF, UNIT, seconds timestamps, exemplars', () => {
  const r = records(OM, 'application/openmetrics-text; version=1.0.0; charset=utf-8') as any[];
  assert.equal(r.length, 6);
  assert.equal(r[0].unit, 'seconds');
  assert.equal(r[0].family, 'acme_http_router_request_seconds');
  assert.deepEqual(r[3].exemplar, { labels: { trace_id: 'KOO5S4vxi0o' }, value: 0.67, timestamp: 1520879607789 });
  assert.equal(r[5].timestamp, 1520879607500);
  assert.equal(sniffFormat(OM), 'openmetrics');
});

test('openmetrics: truncated, blank lines, content after EOF, bad exemplar', () => {
  failsAt(() => metricsRecords('a 1\nb 2\n', 'openmetrics'), 2, 1, /# EOF/);
  failsAt(() => metricsRecords('a 1\n\nb 2\n# EOF\n', 'openmetrics'), 2, 1, /blank/);
  failsAt(() => metricsRecords('a 1\n# EOF\nb 2\n', 'openmetrics'), 3, 1, /after # EOF/);
  failsAt(() => metricsRecords('a 1 # trace 1\n# EOF\n', 'openmetrics'), 1, 7, /label set/);
  failsAt(() => metricsRecords('a{x="1",} 1\n# EOF\n', 'openmetrics'), 1, 8, /trailing comma/);
});

test('http sd: documents are followed, not stored; at most 50 targets; labels merged the Prometheus way', () => {
  const doc = [
    { targets: ['a.example:9100', 'b.example'], labels: { env: 'prod', __metrics_path__: '/m', __param_x: '1' } },
    { targets: [] },
  ];
  const p = parseBody(JSON.stringify(doc), 'application/json', null);
  assert.equal(p.kind, 'sd');
  const targets = p.kind === 'sd' ? p.targets : [];
  assert.equal(targets.length, 2);
  assert.equal(targetUrl(targets[0]!), 'https://a.example:9100/m?x=1');
  assert.equal(targetUrl({ target: 'c:1', labels: {} }), 'https://c:1/metrics');
  assert.deepEqual(mergeTargetLabels({ env: 'dev', job: 'x' }, targets[1]!), {
    env: 'prod',
    exported_env: 'dev',
    job: 'x',
    instance: 'b.example',
  });
  // With json_records_path set, the same document is records.
  assert.equal(parseBody(JSON.stringify({ d: doc }), 'application/json', 'd').kind, 'records');
  const many = [{ targets: Array.from({ length: 51 }, (_, i) => `h${i}:1`) }];
  failsAt(() => parseBody(JSON.stringify(many), 'application/json', null), null, null, /51 targets; at most 50/);
  assert.equal(sdTargets([{ targets: Array.from({ length: 50 }, (_, i) => `h${i}:1`) }]).length, 50);
  failsAt(() => sdTargets([{ targets: ['ok:1', 'bad/path'] }]), null, null, /target 1/);
});

test('content types choose the format; sniffing covers the rest', () => {
  assert.equal(formatOfContentType('application/vnd.api+json'), 'json');
  assert.equal(formatOfContentType('text/plain'), null);
  assert.equal(sniffFormat('x\ty\n1\t2\n'), 'tsv');
  assert.equal(sniffFormat('up 1\n'), 'prometheus');
  failsAt(() => sniffFormat('hello'), 1, 1, /could not tell/);
});
