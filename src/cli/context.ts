import { ApiClient } from './client.js';
import { configPath, readConfig, writeConfig, type ConfigFile, type Profile } from './config-file.js';
import { CliError, usageError } from './errors.js';

/** The options every command takes (docs/cli.md, "Conventions"). */
export interface GlobalOptions {
  profile?: string;
  url?: string;
  project?: string;
  json?: boolean;
}

/** What a command runs with: the resolved profile, server, key and output mode. */
export interface CliContext {
  env: NodeJS.ProcessEnv;
  configPath: string;
  config: ConfigFile;
  profileName: string;
  /** The stored profile, or an empty one (url from flags or the environment). */
  profile: Profile;
  url: string;
  apiKey: string | undefined;
  json: boolean;
  client: ApiClient;
  /** Save `config` (after changing `profile` or others). */
  save(): void;
  /** The project a command acts in: --project, SLUICE_PROJECT, or the profile's default; else a usage error. */
  project(): string;
}

const DEFAULT_URL = 'http://127.0.0.1:8080';

/**
 * Resolve, most specific first: `--url` > `SLUICE_URL` > the profile's url; `SLUICE_API_KEY` > the
 * profile's key; `--profile` > `SLUICE_PROFILE` > the config's default profile.
 */
export function makeContext(
  opts: GlobalOptions,
  env: NodeJS.ProcessEnv = process.env,
  use: { creatingProfile?: boolean } = {},
): CliContext {
  const path = configPath(env);
  const config = readConfig(path);
  const profileName = opts.profile ?? env.SLUICE_PROFILE ?? config.default_profile ?? 'default';
  const stored = config.profiles[profileName];
  if (opts.profile !== undefined && !stored && !env.SLUICE_API_KEY) {
    // A named profile that does not exist is a typo more often than not, except for `login`, which creates it.
    if (!use.creatingProfile)
      throw new CliError(
        `No profile "${opts.profile}" in ${path}; run \`sluice login --profile ${opts.profile}\``,
        1,
        'not_signed_in',
      );
  }
  const profile: Profile = stored ?? { url: '' };
  const url = (opts.url ?? env.SLUICE_URL ?? (profile.url || DEFAULT_URL)).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+/.test(url))
    throw usageError(`--url must be an http(s) URL such as ${DEFAULT_URL}, got "${url}"`);
  const apiKey = env.SLUICE_API_KEY || profile.api_key || undefined;
  const ctx: CliContext = {
    env,
    configPath: path,
    config,
    profileName,
    profile,
    url,
    apiKey,
    json: opts.json === true,
    client: new ApiClient(url, apiKey),
    save: () => writeConfig(config, path),
    project: () => {
      const p = opts.project ?? env.SLUICE_PROJECT ?? profile.project;
      if (!p)
        throw usageError(
          'This command needs a project: pass --project <prj_…>, set SLUICE_PROJECT, or run `sluice projects use <prj_…>`',
        );
      return p;
    },
  };
  return ctx;
}
