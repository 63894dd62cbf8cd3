import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ENVIRONMENT, loadConfig } from '../src/config.js';
import { ENV_TABLE_FILES, withEnvTable } from '../src/config-doc.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

test('ENVIRONMENT describes exactly the SLUICE_* variables loadConfig reads, each once', () => {
  const source = readFileSync(`${ROOT}src/config.ts`, 'utf8');
  const body = source.slice(source.indexOf('export function loadConfig'));
  const read = new Set(body.match(/SLUICE_[A-Z_]+/g));
  const described = ENVIRONMENT.map((v) => v.name);
  assert.equal(new Set(described).size, described.length, 'no variable described twice');
  assert.deepEqual([...described].sort(), [...read].sort(), 'described = read by loadConfig');
  for (const v of ENVIRONMENT) assert.ok(v.default && v.meaning, `${v.name} has a default and a meaning`);
});

test('loadConfig reads each described variable (a set value changes the config)', () => {
  const base = JSON.stringify(loadConfig({}));
  const values: Record<string, string> = {
    SLUICE_HOST: '0.0.0.0',
    SLUICE_DATA_DIR: '/tmp/x',
    SLUICE_PUBLIC_URL: 'https://s.example',
    SLUICE_ADMIN_EMAIL: 'a@b.c',
    SLUICE_LOG_LEVEL: 'warn',
    SLUICE_PIPELINE: '0',
  };
  for (const v of ENVIRONMENT) {
    // A flag takes 1, a number 7, text any value: one of them changes what loadConfig returns.
    const candidates = values[v.name] ? [values[v.name]!] : ['1', '7', 'secret-value'];
    assert.ok(
      candidates.some((value) => JSON.stringify(loadConfig({ [v.name]: value })) !== base),
      v.name,
    );
  }
});

test('the environment tables in README.md and docs/self-hosting.md are generated from ENVIRONMENT (npm run docs:env)', () => {
  for (const f of ENV_TABLE_FILES) {
    const text = readFileSync(`${ROOT}${f}`, 'utf8');
    const expected = withEnvTable(text);
    assert.ok(expected !== null, `${f} has the env-table markers`);
    assert.equal(text, expected, `${f}: the table drifted from src/config.ts; run npm run docs:env`);
  }
});
