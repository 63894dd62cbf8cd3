import cliProgress from 'cli-progress';

export interface ProgressStats {
  offset: number;
  accepted: number;
  refused: number;
  startedAt: number;
}

/** Human-readable bytes (1.5 MB). */
export function formatBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

/**
 * The ingest progress bar on stderr (cli-progress): bytes read of the file, records/s acknowledged,
 * ETA and refusals. Only on a terminal: piped or with --json the run prints just its summary.
 */
export class IngestProgress {
  private readonly bar: cliProgress.SingleBar | null;

  constructor(total: number | null, enabled: boolean) {
    this.bar = enabled
      ? new cliProgress.SingleBar(
          {
            stream: process.stderr,
            format:
              total === null
                ? '{records} records | {rate} rec/s | {bytes} | refused {refused}'
                : '{bar} {percentage}% | {records} records | {rate} rec/s | {bytes} of {total_bytes} | ETA {eta_formatted} | refused {refused}',
            hideCursor: true,
            etaBuffer: 50,
            fps: 5,
          },
          cliProgress.Presets.shades_classic,
        )
      : null;
    this.bar?.start(total ?? 0, 0, {
      records: 0,
      rate: 0,
      bytes: '0 B',
      total_bytes: formatBytes(total ?? 0),
      refused: 0,
    });
  }

  update(s: ProgressStats): void {
    if (!this.bar) return;
    const seconds = Math.max(0.001, (performance.now() - s.startedAt) / 1000);
    this.bar.update(s.offset, {
      records: s.accepted,
      rate: Math.round(s.accepted / seconds),
      bytes: formatBytes(s.offset),
      refused: s.refused,
    });
  }

  stop(): void {
    this.bar?.stop();
  }
}
