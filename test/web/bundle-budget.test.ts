/**
 * The bundle budget (docs/pages.md, "Bundle"): a page of line charts loads at most 150 KB gzip of
 * script and style, ECharts stays out of it (its own chunk, loaded only by pie, radar, gauge and
 * calendar cards), and every file is hashed and precompressed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILD_DIR, type WebManifest } from '../../src/web/assets.js';

const BUDGET_GZIP_BYTES = 150 * 1024;

test('a page of line charts loads at most 150 KB gzip; ECharts only on demand', () => {
  const manifestPath = join(BUILD_DIR, 'manifest.json');
  assert.ok(existsSync(manifestPath), 'npm run build writes dist/web/manifest.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as WebManifest;
  const page = manifest.entries.page!;
  const loaded = [page.js, ...(page.css ? [page.css] : []), ...page.imports];
  const gzip = loaded.reduce((n, f) => n + manifest.files[f]!.gzip, 0);
  console.log(`bundle: a page of line charts loads ${(gzip / 1024).toFixed(1)} KB gzip (${loaded.join(', ')})`);
  assert.ok(gzip <= BUDGET_GZIP_BYTES, `${gzip} bytes gzip is over the budget of ${BUDGET_GZIP_BYTES}`);

  const echarts = Object.keys(manifest.files).filter((f) => f.startsWith('chart-echarts-'));
  assert.equal(echarts.length, 1, 'ECharts is a chunk of its own');
  assert.ok(!loaded.includes(echarts[0]!), 'and not loaded with the page');
  const pageJs = readFileSync(join(BUILD_DIR, 'assets', page.js), 'utf8');
  assert.ok(pageJs.includes(echarts[0]!), 'the page imports it by its hashed name, on demand');
  assert.ok(!/zrender|echarts\.init/i.test(pageJs.replace(echarts[0]!, '')), 'no ECharts code in the page bundle');

  for (const [name, sizes] of Object.entries(manifest.files)) {
    assert.match(name, /-[A-Z0-9]{8}\.(js|css)$/, `${name} has a content hash`);
    for (const ext of ['.gz', '.br'])
      assert.ok(existsSync(join(BUILD_DIR, 'assets', name + ext)), `${name}${ext} is written at build time`);
    assert.ok(sizes.gzip < sizes.bytes && sizes.brotli < sizes.bytes);
  }
});
