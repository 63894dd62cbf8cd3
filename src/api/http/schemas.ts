/** Schema helpers live below the API (src/http/schemas.ts): the aggregation service validates with them too. */
export * from '../../http/schemas.js';
