// Rewrite the environment tables of README.md and docs/self-hosting.md from ENVIRONMENT in
// src/config.ts (run through `npm run docs:env`, which builds first).
import { fileURLToPath } from 'node:url';
import { writeEnvTables } from '../dist/src/config-doc.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const changed = writeEnvTables(root);
console.log(changed.length ? `updated ${changed.join(', ')}` : 'environment tables are up to date');
