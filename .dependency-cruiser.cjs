// The layer rule (docs/architecture.md, "Layers"): a module imports only its own layer or layers below.
// Top to bottom:
//   entry      server.ts, main.ts, services.ts, api/, web/, cli/
//   features   monitor/, pull/, notify/, attention/
//   ingest     ingest/
//   pipeline   pipeline/
//   stages     transform/, rollup/, schema/, commit/ (the batch commit contract)
//   base       catalog/, accounts/, auth/, store/, records/, spool/, telemetry/, http/, schedule/, outbound/, self-metrics/, and src/*.ts utilities
// Checked on the TypeScript sources (type-only imports count: a type is a dependency too), parsed by swc
// because the project's TypeScript 7 has no compiler API for dependency-cruiser.
const entry = '^src/(api|web|cli)/|^src/(server|main|services|bootstrap)\\.ts$';
const features = '^src/(monitor|pull|notify|attention)/';
const ingest = '^src/ingest/';
const pipeline = '^src/pipeline/';
const stages = '^src/(transform|rollup|schema|commit)/';
const base = '^src/(catalog|accounts|auth|store|records|http|schedule|outbound|self-metrics|spool|telemetry)/|^src/(?!(?:server|main|services|bootstrap)\\.ts$)[^/]+\\.ts$';
const above = (...layers) => layers.join('|');

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'Import cycles hide the order modules depend on.', from: {}, to: { circular: true } },
    { name: 'features-below-entry', severity: 'error', from: { path: features }, to: { path: entry } },
    { name: 'ingest-below-features', severity: 'error', from: { path: ingest }, to: { path: above(entry, features) } },
    { name: 'pipeline-below-ingest', severity: 'error', from: { path: pipeline }, to: { path: above(entry, features, ingest) } },
    { name: 'stages-below-pipeline', severity: 'error', from: { path: stages }, to: { path: above(entry, features, ingest, pipeline) } },
    { name: 'base-below-stages', severity: 'error', from: { path: base }, to: { path: above(entry, features, ingest, pipeline, stages) } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    parser: 'swc',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
