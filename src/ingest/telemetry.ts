/** Moved below ingest and pipeline (both count into it): src/telemetry/pipeline-telemetry.ts. */
export * from '../telemetry/pipeline-telemetry.js';
