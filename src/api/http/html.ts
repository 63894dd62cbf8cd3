import type { Envelope } from './envelope.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/**
 * JSON made safe inside `<script type="application/json">`: `<`, `>`, `&` and the line separators
 * are written as \u escapes, so no value (a series label `</script><script>…`) can end the element.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** A web page route's failure as a small HTML page: the status, the code and the message. */
export function errorPage(envelope: Envelope): string {
  const err = envelope.error;
  const title = `${envelope.status} ${err?.code ?? 'error'}`;
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title>` +
    '<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem}@media(prefers-color-scheme:dark){body{background:#111;color:#ddd}}</style></head>' +
    `<body><h1>${escapeHtml(title)}</h1><p data-error-code="${escapeHtml(err?.code ?? '')}">${escapeHtml(err?.message ?? '')}</p></body></html>`
  );
}
