import type { TestServer } from '../helpers/server.js';

/** A project, a source and an active ingest key created through the HTTP API. */
export interface IngestFixture {
  projectId: string;
  sourceId: string;
  keyId: string;
  secret: string;
  /** The key's ingest url as the API returns it. */
  url: string;
}

export async function createIngestKey(srv: TestServer, name = 'ingest test'): Promise<IngestFixture> {
  const project = await srv.post('/v1/projects', { name });
  if (project.status !== 201) throw new Error(`create project: ${JSON.stringify(project.body)}`);
  const projectId = project.body.data.id as string;
  const source = await srv.post(`/v1/projects/${projectId}/sources`, { name: 'web' });
  if (source.status !== 201) throw new Error(`create source: ${JSON.stringify(source.body)}`);
  const sourceId = source.body.data.id as string;
  const key = await srv.post(`/v1/projects/${projectId}/sources/${sourceId}/ingest_keys`, {});
  if (key.status !== 201) throw new Error(`create ingest key: ${JSON.stringify(key.body)}`);
  return { projectId, sourceId, keyId: key.body.data.id, secret: key.body.data.key, url: key.body.data.url };
}

export interface IngestReply {
  status: number;
  headers: Headers;
  body: any;
}

/** POST to /ingest on `base` with the given query string and body. */
export async function ingest(
  base: string,
  query: string,
  body: string | Uint8Array | undefined,
  headers: Record<string, string> = {},
): Promise<IngestReply> {
  const res = await fetch(`${base}/ingest${query ? `?${query}` : ''}`, {
    method: 'POST',
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

export function ndjson(records: object[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + '\n';
}
