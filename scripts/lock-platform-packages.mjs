// Add lockfile entries for platform-specific optional packages the npm registry mirror here does
// not carry, so `npm ci` accepts the lockfile (npm/cli#9846). Each entry names its os/cpu, so npm
// skips it on other machines. Run after any `npm install` that rewrites package-lock.json:
//   node scripts/lock-platform-packages.mjs
import { readFileSync, writeFileSync } from 'node:fs';
const file = process.argv[2] ?? 'package-lock.json';
const lock = JSON.parse(readFileSync(file, 'utf8'));
const pkgs = lock.packages;
const plat = (name) => {
  const m = /-(darwin|linux|win32|freebsd|android)-(arm64|x64|arm|ia32)(?:-(musl|gnu))?$/.exec(name);
  return m ? { os: [m[1]], cpu: [m[2]], ...(m[3] ? { libc: [m[3]] } : {}) } : null;
};
let added = 0;
for (const [path, entry] of Object.entries(pkgs)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = 'node_modules/' + dep;
    if (pkgs[key] || pkgs[path + '/node_modules/' + dep]) continue;
    const p = plat(dep);
    if (!p) {
      console.error('not a platform package, left alone:', dep);
      continue;
    }
    pkgs[key] = { version, optional: true, ...p };
    added++;
    console.log('added', key, version);
  }
}
const sorted = Object.fromEntries(
  Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
lock.packages = sorted;
writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
console.log('added', added);
