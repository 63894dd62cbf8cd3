import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError } from './errors.js';

/** One named sign-in: where the server is and the key the CLI acts with. */
export interface Profile {
  url: string;
  api_key?: string;
  /** The key's id, so `logout` can make the key delete itself. */
  key_id?: string;
  team_id?: string;
  /** Default project for commands that need one (`sluice projects use <id>`). */
  project?: string;
  /** Ingest key secrets the CLI created, by source id (reused by `sluice ingest`). */
  ingest_keys?: Record<string, string>;
}

export interface ConfigFile {
  default_profile: string;
  profiles: Record<string, Profile>;
}

/** The CLI's directory: `$XDG_CONFIG_HOME/sluice`, else `~/.config/sluice`. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME?.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'sluice');
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'config.json');
}

/** The config file, or an empty one when it does not exist yet. A file that is not ours is an error, never overwritten. */
export function readConfig(path = configPath()): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { default_profile: 'default', profiles: {} };
    throw new CliError(`Cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    const parsed = JSON.parse(text) as Partial<ConfigFile>;
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      typeof parsed.profiles !== 'object' ||
      parsed.profiles === null
    )
      throw new Error('no "profiles" object');
    return {
      default_profile: typeof parsed.default_profile === 'string' ? parsed.default_profile : 'default',
      profiles: parsed.profiles,
    };
  } catch (err) {
    throw new CliError(`${path} is not a valid sluice config (${(err as Error).message}); fix or remove it`);
  }
}

/**
 * Write the config with mode 0600 (it holds API keys) in its 0700 directory, through a temporary
 * file and a rename so a crash never leaves half a file.
 */
export function writeConfig(config: ConfigFile, path = configPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  // writeFileSync's mode applies only when it creates the file.
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}
