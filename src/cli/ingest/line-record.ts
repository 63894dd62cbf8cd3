import type { BatchRecord } from './batches.js';

/**
 * A record of an NDJSON batch: its place in the batch's body; its text is decoded only when asked
 * for (a batch the server refuses a line of is checked and rebuilt from its records' texts).
 */
export class LineRecord implements BatchRecord {
  constructor(
    private readonly body: Buffer,
    private readonly start: number,
    private readonly end: number,
    readonly line: number,
  ) {}

  get text(): string {
    return this.body.toString('utf8', this.start, this.end);
  }
}
