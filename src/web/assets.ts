import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiError, notFound } from '../errors.js';
import type { Reply } from '../api/http/route.js';
import { accepts } from '../api/http/web-reply.js';

/** What `scripts/build-web.mjs` writes to `dist/web/manifest.json`. */
export interface WebManifest {
  /** Entry point name → its hashed script, its stylesheet, and the chunks it imports statically. */
  entries: Record<string, { js: string; css: string | null; imports: string[] }>;
  /** Every emitted file → sizes in bytes, plain and precompressed. */
  files: Record<string, { bytes: number; gzip: number; brotli: number }>;
}

interface Asset {
  body: Buffer;
  gzip: Buffer | null;
  brotli: Buffer | null;
  etag: string;
  contentType: string;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};
/** Hashed names never change content: a year, and `immutable` so reloads do not even revalidate. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** `dist/web` beside the compiled server (`dist/src/web/assets.js`). */
export const BUILD_DIR = fileURLToPath(new URL('../../web/', import.meta.url));

/**
 * The browser code built at `npm run build` (docs/pages.md, "Web replies"): hashed file names,
 * served with a strong ETag (304 on `If-None-Match`), cached for a year as immutable, and as the
 * `.br` or `.gz` file written at build time when the request accepts it. Read once into memory at
 * start: a few files, a few hundred KB. Nothing is fetched from elsewhere at run time.
 */
export class WebAssets {
  private readonly files = new Map<string, Asset>();

  private constructor(
    readonly manifest: WebManifest | null,
    dir: string,
  ) {
    if (!manifest) return;
    for (const name of Object.keys(manifest.files)) {
      const path = join(dir, 'assets', name);
      const body = readFileSync(path);
      const ext = name.slice(name.lastIndexOf('.'));
      this.files.set(name, {
        body,
        gzip: existsSync(`${path}.gz`) ? readFileSync(`${path}.gz`) : null,
        brotli: existsSync(`${path}.br`) ? readFileSync(`${path}.br`) : null,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
        contentType: TYPES[ext] ?? 'application/octet-stream',
      });
    }
  }

  /** The build's assets, or none when the web build has not run (pages then say so). */
  static fromBuild(dir: string = BUILD_DIR): WebAssets {
    const path = join(dir, 'manifest.json');
    return new WebAssets(existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as WebManifest) : null, dir);
  }

  /** Script and stylesheet URLs of an entry point, or null without a build. */
  entry(name: string): { js: string; css: string | null; preload: string[] } | null {
    const e = this.manifest?.entries[name];
    if (!e) return null;
    return {
      js: `/assets/${e.js}`,
      css: e.css ? `/assets/${e.css}` : null,
      preload: e.imports.map((f) => `/assets/${f}`),
    };
  }

  /** The reply for GET /assets/<name> given the request's headers. */
  serve(name: string, headers: Record<string, string>): Reply {
    const asset = this.files.get(name);
    if (!asset) {
      if (!this.manifest)
        throw new ApiError('not_found', 'The web assets are not built on this server: run npm run build');
      throw notFound(`Asset ${name}`);
    }
    const common = { etag: asset.etag, 'cache-control': IMMUTABLE, vary: 'Accept-Encoding' };
    const match = headers['if-none-match'];
    if (match?.split(',').some((t) => t.trim().replace(/^W\//, '') === asset.etag)) {
      return {
        status: 304,
        data: null,
        headers: common,
        web: { kind: 'bytes', body: '', contentType: asset.contentType },
      };
    }
    if (asset.brotli && accepts(headers, 'br'))
      return {
        data: null,
        headers: { ...common, 'content-encoding': 'br' },
        web: { kind: 'bytes', body: asset.brotli, contentType: asset.contentType, encoded: true },
      };
    if (asset.gzip && accepts(headers, 'gzip'))
      return {
        data: null,
        headers: { ...common, 'content-encoding': 'gzip' },
        web: { kind: 'bytes', body: asset.gzip, contentType: asset.contentType, encoded: true },
      };
    return {
      data: null,
      headers: common,
      web: { kind: 'bytes', body: asset.body, contentType: asset.contentType, encoded: true },
    };
  }
}
