import { invalidField } from '../errors.js';
import type { OutboundClient } from './types.js';

/**
 * For create/update routes: check `url` with the outbound client's rules (scheme, every address its
 * host resolves to) and throw `request_validation_failed` naming `field` when it is refused; the
 * message says why (e.g. "body.url resolves to 10.0.0.1, which is private …") and what the
 * outbound code was is kept in the issue's `code`.
 */
export async function assertCallableTarget(
  client: OutboundClient,
  url: string,
  field: string,
  opts?: { requireHttps?: boolean },
): Promise<void> {
  const result = await client.checkTarget(url, opts);
  if (result.ok) return;
  const err = invalidField(field, `cannot be called: ${result.message}`);
  (err.details as Array<Record<string, unknown>>)[0]!.code = result.code;
  throw err;
}
