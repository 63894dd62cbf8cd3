import { hostname } from 'node:os';
import type { Command } from 'commander';
import { ApiClient } from '../client.js';
import type { CliContext } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { formatRecord, printJson } from '../output.js';
import { Prompter } from '../prompt.js';
import { action } from '../run.js';

/** What `GET /v1/whoami` answers (src/api/whoami/routes.ts). */
export interface WhoAmI {
  kind: 'key' | 'session';
  team_id: string | null;
  key_id: string | null;
  key_name: string | null;
  user_id: string | null;
  email: string | null;
  scopes: Record<string, string[]>;
}

/** Name of a key `login` creates: it says which machine holds it (2 to 60 characters, the API's rule). */
export function machineKeyName(): string {
  return `sluice cli on ${hostname() || 'unknown host'}`.slice(0, 60);
}

async function signInWithPassword(
  client: ApiClient,
  email: string,
  password: string,
  team: string | undefined,
): Promise<string> {
  const session = await client.data<{ token: string }>('POST', '/v1/sessions', {
    token: null,
    body: { email, password },
  });
  try {
    const key = await client.data<{ api_key: string }>('POST', '/v1/keys', {
      token: session.token,
      body: { name: machineKeyName() },
      ...(team ? { headers: { 'x-team-id': team } } : {}),
    });
    return key.api_key;
  } finally {
    // The session was only the way to make the key: end it rather than leave it valid for days.
    await client.request('DELETE', '/v1/sessions', { token: session.token }).catch(() => undefined);
  }
}

function describe(ctx: CliContext, me: WhoAmI): string {
  const who = me.kind === 'key' ? `API key "${me.key_name}" (${me.key_id})` : `session of ${me.email}`;
  return `${who} in team ${me.team_id ?? '(none)'} at ${ctx.url}, profile "${ctx.profileName}"`;
}

/** `login`, `logout`, `whoami` (docs/cli.md, "Signing in"). */
export function registerAuth(program: Command): void {
  program
    .command('login')
    .description(
      'Sign in: store a key for a server in a named profile ($XDG_CONFIG_HOME/sluice/config.json, mode 0600)',
    )
    .option('--email <email>', 'sign in with email and password (asked for) and create a key named after this machine')
    .option('--team <team_id>', 'with --email: the team the new key acts in (default: your first team)')
    .addHelpText(
      'after',
      `
Asks for the server URL and an API key; leave the key empty to sign in with email and password
instead (a key named "${machineKeyName()}" is then created). Answers may come from a pipe.

Examples:
  $ sluice login
  $ sluice login --url https://sluice.example.com --profile prod
  $ printf '%s\\n' "$KEY" | sluice login --url http://127.0.0.1:8080
  $ sluice login --email admin@localhost --team team_…`,
    )
    .action(
      action<{ email?: string; team?: string }>(
        async (ctx, opts) => {
          const prompt = new Prompter();
          try {
            const url = opts.url ?? ctx.env.SLUICE_URL ?? (await prompt.ask('Sluice URL', { fallback: ctx.url }));
            if (!/^https?:\/\/[^/]+/.test(url))
              throw usageError(`The URL must start with http:// or https://, got "${url}"`);
            const client = new ApiClient(url.replace(/\/+$/, ''), undefined);
            let apiKey = '';
            let email = opts.email;
            if (email === undefined)
              apiKey = await prompt.ask('API key (empty: sign in with email and password)', { secret: true });
            if (!apiKey) {
              email ??= await prompt.ask('Email');
              const password = await prompt.ask('Password', { secret: true });
              if (!email || !password) throw usageError('Give an API key, or an email and a password');
              apiKey = await signInWithPassword(client, email, password, opts.team);
            }
            const me = await client.data<WhoAmI>('GET', '/v1/whoami', { token: apiKey });
            const profile = {
              ...ctx.profile,
              url: client.baseUrl,
              api_key: apiKey,
              ...(me.key_id ? { key_id: me.key_id } : {}),
              ...(me.team_id ? { team_id: me.team_id } : {}),
            };
            // A key for another server or team: its ingest keys and default project do not apply.
            if (ctx.profile.url !== profile.url || ctx.profile.team_id !== me.team_id) {
              delete profile.project;
              delete profile.ingest_keys;
            }
            ctx.config.profiles[ctx.profileName] = profile;
            if (Object.keys(ctx.config.profiles).length === 1) ctx.config.default_profile = ctx.profileName;
            ctx.save();
            if (ctx.json) printJson({ profile: ctx.profileName, url: profile.url, config: ctx.configPath, ...me });
            else
              process.stdout.write(
                `Signed in: ${describe({ ...ctx, url: profile.url }, me)}\nSaved to ${ctx.configPath}\n`,
              );
          } finally {
            prompt.close();
          }
        },
        { creatingProfile: true },
      ),
    );

  program
    .command('logout')
    .description("Sign out: the profile's key deletes itself on the server, then it is removed from the config")
    .option('--forget', 'only remove the key from the config (when the server is gone for good)')
    .addHelpText(
      'after',
      `
Examples:
  $ sluice logout
  $ sluice logout --profile prod`,
    )
    .action(
      action<{ forget?: boolean }>(async (ctx, opts) => {
        const stored = ctx.config.profiles[ctx.profileName];
        if (!stored?.api_key)
          throw new CliError(`Not signed in: profile "${ctx.profileName}" holds no key`, 1, 'not_signed_in');
        const client = new ApiClient(stored.url, stored.api_key);
        let note = 'the key was deleted on the server';
        if (!opts.forget) {
          try {
            const keyId = stored.key_id ?? (await client.data<WhoAmI>('GET', '/v1/whoami')).key_id;
            if (!keyId) throw new CliError('The stored credential is not an API key', 1);
            // Spec: a key may always delete itself.
            await client.data('DELETE', `/v1/keys/${encodeURIComponent(keyId)}`);
          } catch (err) {
            // A key the server no longer accepts is as good as deleted: forget it.
            if (!(err instanceof CliError) || !err.code.startsWith('auth_')) {
              throw new CliError(
                `${(err as Error).message}\nThe key is still stored; retry, or \`sluice logout --forget\` to only remove it here`,
                1,
                (err as CliError).code ?? 'failed',
              );
            }
            note = 'the server no longer accepted the key';
          }
        } else note = 'the key was not deleted on the server';
        delete stored.api_key;
        delete stored.key_id;
        delete stored.ingest_keys;
        ctx.save();
        if (ctx.json) printJson({ profile: ctx.profileName, logged_out: true, note });
        else process.stdout.write(`Signed out of profile "${ctx.profileName}" (${note}).\n`);
      }),
    );

  program
    .command('whoami')
    .description('Show the server, profile, key, team and scopes in use')
    .addHelpText(
      'after',
      `
Examples:
  $ sluice whoami
  $ SLUICE_API_KEY=… SLUICE_URL=http://127.0.0.1:8080 sluice whoami --json`,
    )
    .action(
      action(async (ctx) => {
        const me = await ctx.client.data<WhoAmI>('GET', '/v1/whoami');
        if (ctx.json) {
          printJson({ profile: ctx.profileName, url: ctx.url, ...me });
          return;
        }
        const scopes = Object.entries(me.scopes)
          .map(([k, v]) => `${k}:${v.join('/')}`)
          .join(' ');
        process.stdout.write(
          formatRecord({
            url: ctx.url,
            profile: ctx.profileName,
            kind: me.kind,
            key: me.key_id ? `${me.key_name} (${me.key_id})` : null,
            user: me.email,
            team: me.team_id,
            scopes,
          }),
        );
      }),
    );
}
