import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';

/**
 * Questions on stderr, answers from stdin. On a terminal the password is not echoed; from a pipe the
 * answers are read line by line in order (readline's `question` would drop lines that arrive together).
 */
export class Prompter {
  private muted = false;
  private readonly lines: AsyncIterator<string>;
  private readonly rl;

  constructor(private readonly input: NodeJS.ReadStream = process.stdin) {
    const out = new Writable({
      write: (chunk, _enc, cb) => {
        if (!this.muted) process.stderr.write(chunk);
        cb();
      },
    });
    this.rl = createInterface({ input, output: out, terminal: input.isTTY === true });
    this.lines = this.rl[Symbol.asyncIterator]();
  }

  /** Ask once; the answer trimmed, or `fallback` for an empty one. Input that ends gives ''. */
  async ask(question: string, opts: { fallback?: string; secret?: boolean } = {}): Promise<string> {
    process.stderr.write(question + (opts.fallback ? ` [${opts.fallback}]` : '') + ': ');
    this.muted = opts.secret === true && this.input.isTTY === true;
    const next = await this.lines.next();
    if (this.muted) process.stderr.write('\n');
    this.muted = false;
    if (this.input.isTTY !== true) process.stderr.write('\n');
    const answer = next.done ? '' : next.value.trim();
    return answer || opts.fallback || '';
  }

  close(): void {
    this.rl.close();
  }
}
