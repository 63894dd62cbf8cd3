/**
 * Moved to `src/schema/schema-store.ts`. Kept only for `process-batch.ts`'s `FileCounts` import;
 * delete once that file imports from `../schema/schema-store.js`.
 */
export type { FileCounts } from '../schema/schema-store.js';
