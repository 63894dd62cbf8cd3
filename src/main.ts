import { loadConfig } from './config.js';
import { startSluice } from './server.js';

/** `npm start`: serve on the SLUICE_* configuration, print where and the bootstrap credentials. */
async function main(): Promise<void> {
  const config = loadConfig();
  const sluice = await startSluice({ config });
  if (sluice.bootstrap) {
    const b = sluice.bootstrap;
    process.stdout.write(
      [
        '',
        'First start: created an owner, a team and an API key. They are shown once, and kept in',
        `${config.dataDir}/bootstrap.json (mode 0600):`,
        `  email     ${b.email}`,
        `  password  ${b.password}`,
        `  api key   ${b.api_key}`,
        `  team id   ${b.team_id}`,
        '',
        `Try: curl -H "Authorization: Bearer ${b.api_key}" ${sluice.url}/v1/projects`,
        '',
      ].join('\n'),
    );
  }
  // Last, so whoever waits for this line has everything printed before it.
  process.stdout.write(`\nSluice is listening on ${sluice.url} (data in ${config.dataDir})\n`);
  // A parent that started Sluice with an IPC channel (the benchmarks) may ask for the pipeline's
  // counters and where the memory is; nothing else is answered there.
  if (process.send) {
    process.on('message', (m: { type?: unknown } | null) => {
      if (m?.type === 'sluice:pipeline-counters')
        process.send?.({ type: 'sluice:pipeline-counters', counters: sluice.services.pipeline?.counters() ?? null });
      if (m?.type === 'sluice:memory')
        void sluice.memory().then(
          (memory) => process.send?.({ type: 'sluice:memory', memory }),
          () => process.send?.({ type: 'sluice:memory', memory: null }),
        );
    });
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    sluice.services.log.info({ signal }, 'shutting down');
    sluice.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        sluice.services.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`sluice failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
