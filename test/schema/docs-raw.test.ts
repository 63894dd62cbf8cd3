import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BOOTSTRAP_KEY, TestServer } from '../helpers/server.js';
import { createIngestKey, ingest } from '../ingest/helpers.js';

test('docs returns each document exactly as sent: big numbers, exact digits, key order, spacing', async () => {
  const srv = await TestServer.start({ env: { SLUICE_WORKERS: '1' } });
  try {
    const f = await createIngestKey(srv, 'docs raw');
    const lines = [
      '{"big":1e400,"int":123456789012345678901234567890}',
      '{"z":1,"a":{"y":2,"b":3},"neg":-0.0,"e":1E+2}',
      '{"s":"\\u2028 é \\ud83d\\ude00 \\"q\\""}',
    ];
    const res = await ingest(srv.url, `key=${f.secret}&collection=events`, lines.join('\n'), {
      'content-type': 'application/x-ndjson',
    });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const pretty = '{\n  "timestamp": "2020-01-01T00:00:00Z",\n  "b": 2,   "a": 1\n}';
    const one = await ingest(srv.url, `key=${f.secret}&collection=events`, pretty, {
      'content-type': 'application/json',
    });
    assert.equal(one.status, 202, JSON.stringify(one.body));
    assert.ok(await srv.sluice.services.pipeline!.idle(20_000));
    const collectionId = (await srv.get(`/v1/projects/${f.projectId}/collections`)).body.data.find(
      (c: any) => c.slug === 'events',
    ).id;
    const http = await fetch(`${srv.url}/v1/projects/${f.projectId}/collections/${collectionId}/docs?sort=asc`, {
      headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` },
    });
    assert.equal(http.status, 200);
    const text = await http.text();
    // The response is one valid JSON envelope…
    const body = JSON.parse(text);
    assert.equal(body.status, 200);
    assert.equal(body.error, null);
    assert.equal(body.data.length, 4);
    assert.ok(body.pagination);
    // …whose data array is the documents' own text, in order (the pretty one is oldest by timestamp).
    assert.ok(text.includes(`"data":[${[pretty, ...lines].join(',')}]`), text);
    // biome-ignore lint/correctness/noPrecisionLoss: the document's integer is past 2^53 on purpose, compared as JSON.parse reads it
    assert.equal(body.data[1].int, 123456789012345678901234567890);
    assert.deepEqual(Object.keys(body.data[2]), ['z', 'a', 'neg', 'e']);
    assert.equal(body.data[3].s, '\u2028 é \ud83d\ude00 "q"');
  } finally {
    await srv.stop();
  }
});
