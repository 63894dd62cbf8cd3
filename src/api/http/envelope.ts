/** The envelope moved below both api and ingest (src/http/envelope.ts); kept for route modules. */
export * from '../../http/envelope.js';
