import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { Store } from '../../src/store/db.js';

/** A Store (real LMDB) in a fresh directory, closed and removed after the test. */
export function scratchStore(t: TestContext, prefix: string): Store {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const store = new Store(dir);
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}
