import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Files under `dir`, recursively. A running server may rename or remove files meanwhile, so entry
 * types come with the listing (no stat of a name that may be gone).
 */
export function* filesUnder(dir: string): Iterable<string> {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* filesUnder(p);
    else yield p;
  }
}
