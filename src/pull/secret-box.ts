import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';

/** File under the data dir holding the generated key when `SLUICE_SECRET_KEY` is not set. */
export const SECRET_KEY_FILE = 'secret.key';
const VERSION = 'v1';

/**
 * Seals short secrets (header values of pulls and checks) with AES-256-GCM. Each value gets a fresh
 * 96-bit IV; `context` (owner id and header name) is bound as additional data, so a sealed value
 * copied onto another record or header does not open.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /**
   * The key from `SLUICE_SECRET_KEY` (64 hex characters, or base64 of 32 bytes), else from
   * `DATA_DIR/secret.key`, generated there (mode 0600) on first use.
   */
  static open(dataDir: string, configured: string | undefined): SecretBox {
    if (configured !== undefined) return new SecretBox(parseKey(configured, 'SLUICE_SECRET_KEY'));
    const path = join(dataDir, SECRET_KEY_FILE);
    if (existsSync(path)) return new SecretBox(parseKey(readFileSync(path, 'utf8').trim(), path));
    const key = randomBytes(32);
    // `wx`: never overwrite a key another start wrote meanwhile; the mode applies at creation.
    writeFileSync(path, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    chmodSync(path, 0o600);
    return new SecretBox(key);
  }

  seal(plain: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [
      VERSION,
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      data.toString('base64url'),
    ].join('.');
  }

  /** Throws when the value was sealed under another key or context (a changed `SLUICE_SECRET_KEY`). */
  open(sealed: string, context: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== VERSION || iv === undefined || tag === undefined || data === undefined)
      throw new Error('sealed value has an unknown format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}

function parseKey(raw: string, from: string): Buffer {
  if (/^[0-9a-fA-F]{64}$/.test(raw)) return Buffer.from(raw, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(raw)) {
    const key = Buffer.from(raw, raw.includes('-') || raw.includes('_') ? 'base64url' : 'base64');
    if (key.length === 32) return key;
  }
  throw new Error(
    `${from} must hold a 256-bit key: 64 hex characters or the base64 of 32 bytes (e.g. openssl rand -hex 32)`,
  );
}
