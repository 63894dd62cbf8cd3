import { open, type RootDatabase, type Database, type DatabaseOptions, type Key } from 'lmdb';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError } from '../errors.js';

/**
 * One LMDB environment under `DATA_DIR/lmdb` holds the control plane and the spool as named
 * databases, so a control-plane change and a spool write can share a transaction.
 */
export class Store {
  readonly root: RootDatabase;
  private readonly dbs = new Map<string, Database>();
  /** `afterCommit` callbacks of the transaction callback running now (null outside one). */
  private committing: CommitHook[] | null = null;

  constructor(dataDir: string) {
    const path = join(dataDir, 'lmdb');
    mkdirSync(path, { recursive: true });
    this.root = guard('open', () =>
      open({
        path,
        // Durable commits: an acknowledged write survives a crash or power loss.
        noSync: false,
        maxDbs: 128,
        // Sparse file; grows on demand on Linux.
        mapSize: 64 * 1024 ** 3,
        pageSize: 8192,
      }),
    );
  }

  /** A named database storing msgpack values under ordered-binary keys. */
  db<V = unknown, K extends Key = Key>(name: string): Database<V, K> {
    let db = this.dbs.get(name);
    if (!db) {
      db = guard('open database', () => this.root.openDB({ name }));
      this.dbs.set(name, db);
    }
    return db as unknown as Database<V, K>;
  }

  /**
   * Run `fn` in one write transaction (serialised with every other write); its reads are consistent,
   * and when it throws none of its writes commit. (lmdb-js `transaction` does not undo the writes of
   * a callback that throws — lmdb 3.5 commits what was staged before the throw; its `childTransaction`
   * runs the callback in an abortable nested transaction of the same batched commit.)
   */
  transaction<T>(fn: () => T): Promise<T> {
    let hooks: CommitHook[] = [];
    return guardAsync('transaction', async () => {
      let out: T;
      try {
        out = await this.root.childTransaction(() => {
          // A callback run again starts over: hooks of an earlier run do not count.
          hooks = [];
          const outer = this.committing;
          this.committing = hooks;
          try {
            return fn();
          } finally {
            this.committing = outer;
          }
        });
      } catch (err) {
        for (const h of hooks) h.failed?.();
        throw err;
      }
      // In commit order, before the caller continues: in-memory views follow LMDB.
      for (const h of hooks) h.committed();
      return out;
    });
  }

  /**
   * Inside a `transaction` callback: run `committed` once that transaction has committed, or
   * `failed` when it did not. In-memory views derived from LMDB apply their changes here, so they
   * never show a write that did not commit. Neither may throw.
   */
  afterCommit(committed: () => void, failed?: () => void): void {
    if (this.committing === null) throw new Error('afterCommit called outside a Store.transaction callback');
    this.committing.push({ committed, ...(failed ? { failed } : {}) });
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}

interface CommitHook {
  committed(): void;
  failed?(): void;
}

/** The one boundary where LMDB failures become catalogue errors (ApiErrors thrown inside pass through). */
function guard<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw storeError(what, err);
  }
}

async function guardAsync<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw storeError(what, err);
  }
}

function storeError(what: string, err: unknown): unknown {
  if (err instanceof ApiError) return err;
  return new ApiError('server_error', `storage failed during ${what}`, { cause: err });
}

/**
 * A named database of the shared environment with plain msgpack values. Without msgpackr's shared
 * record structures (the environment default) a put costs about half as much on the hot path.
 */
export function openPlain<V, K extends Key>(store: Store, name: string): Database<V, K> {
  const options: DatabaseOptions & { name: string; useRecords: boolean } = {
    name,
    encoding: 'msgpack',
    useRecords: false,
  };
  return store.root.openDB<V, K>(options);
}
