/**
 * Request headers that keep the spelling they were given and are matched case-insensitively: a
 * pull's `X-API-Key` goes on the wire as `X-API-Key` (some servers compare header names by case,
 * HTTP/1.1 allows either), while the client's own checks (`accept-encoding` set?, credentials dropped
 * on a cross-origin redirect) find it whatever its case. One entry per name: setting a name again
 * (any spelling) replaces the entry, spelling included.
 */
export class HeaderSet {
  /** Lowercased name → [name as given, value], in the order first set. */
  private readonly entries = new Map<string, [string, string]>();

  constructor(init?: Record<string, string>) {
    for (const [name, value] of Object.entries(init ?? {})) this.set(name, value);
  }

  has(name: string): boolean {
    return this.entries.has(name.toLowerCase());
  }

  get(name: string): string | undefined {
    return this.entries.get(name.toLowerCase())?.[1];
  }

  set(name: string, value: string): void {
    const key = name.toLowerCase();
    // Replaced in place (Map keeps the first position), with the new spelling.
    this.entries.set(key, [name, value]);
  }

  delete(name: string): void {
    this.entries.delete(name.toLowerCase());
  }

  /** `[name, value, name, value, …]` with the names as given: the form undici sends without changing case. */
  pairs(): string[] {
    const out: string[] = [];
    for (const [name, value] of this.entries.values()) out.push(name, value);
    return out;
  }
}
