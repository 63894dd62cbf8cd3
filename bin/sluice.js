#!/usr/bin/env node
// The `sluice` command (package.json "bin"): the compiled CLI. Build first: `npm run build`.
import '../dist/src/cli/main.js';
