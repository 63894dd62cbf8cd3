// Bundles the pages' browser code (src/web/client) with esbuild into dist/web/assets: hashed names,
// ECharts split into its own chunk, every file precompressed as .gz and .br, and a manifest the
// server reads (src/web/assets.ts). Nothing is fetched at run time: uPlot and ECharts come from
// node_modules here. Run by `npm run build`.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = new URL('..', import.meta.url).pathname;
const outDir = join(root, 'dist/web');
const assetsDir = join(outDir, 'assets');
rmSync(outDir, { recursive: true, force: true });
mkdirSync(assetsDir, { recursive: true });

const result = await build({
  absWorkingDir: root,
  entryPoints: { page: 'src/web/client/page.ts' },
  bundle: true,
  splitting: true,
  format: 'esm',
  minify: true,
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  outdir: assetsDir,
  entryNames: '[name]-[hash]',
  chunkNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

const manifest = { entries: {}, files: {} };
for (const [path, out] of Object.entries(result.metafile.outputs)) {
  const name = basename(path);
  const body = readFileSync(join(root, path));
  const gz = gzipSync(body, { level: 9 });
  const br = brotliCompressSync(body, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
  });
  writeFileSync(join(root, `${path}.gz`), gz);
  writeFileSync(join(root, `${path}.br`), br);
  manifest.files[name] = { bytes: body.length, gzip: gz.length, brotli: br.length };
  if (out.entryPoint) {
    const entry = basename(out.entryPoint).replace(/\.ts$/, '');
    manifest.entries[entry] = {
      js: name,
      css: out.cssBundle ? basename(out.cssBundle) : null,
      // Chunks the entry imports statically load with it (modulepreload); dynamic ones (ECharts) only when a card needs them.
      imports: out.imports.filter((i) => i.kind === 'import-statement' && !i.external).map((i) => basename(i.path)),
    };
  }
}
writeFileSync(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
const total = (names) => names.reduce((n, f) => n + (manifest.files[f]?.gzip ?? 0), 0);
const page = manifest.entries.page;
console.log(
  `web: ${Object.keys(manifest.files).length} files; a page of line charts loads ${(total([page.js, page.css, ...page.imports].filter(Boolean)) / 1024).toFixed(1)} KB gzip`,
);
