/**
 * The 5-field view scripts the benchmarks run (sandbox.bench.ts in isolation, e2e.bench.ts through
 * a real server), with the output schema each declares, so both measure the same work.
 */
import type { OutputField } from '../../src/transform/output-schema.js';

export interface ViewScript {
  script: string;
  outputSchema: OutputField[];
}

/** Flat records (bench/pipeline/records.ts): four fields of the record and the record's time. */
export const FLAT_VIEW: ViewScript = {
  script: `function transform(r, ctx) {
  return { event: r.event, ts: r.ts, ip: r.ctx.ip, ua: r.ctx.ua, at: ctx.timestamp };
}`,
  outputSchema: [
    { name: 'event', type: 'string' },
    { name: 'ts', type: 'number' },
    { name: 'ip', type: 'string' },
    { name: 'ua', type: 'string' },
    { name: 'at', type: 'date' },
  ],
};

const NESTED_FIELDS: OutputField[] = [
  { name: 'id', type: 'string' },
  { name: 'user', type: 'string' },
  { name: 'followers', type: 'number' },
  { name: 'hashtags', type: 'array' },
  { name: 'has_media', type: 'boolean' },
];

/** Nested status records (nested-records.ts): fields at depth 1 to 3, one mapped array. */
export const NESTED_VIEW: ViewScript = {
  script: `function transform(s, ctx) {
  return {
    id: s.id_str,
    user: s.user.screen_name,
    followers: s.user.followers_count,
    hashtags: s.entities.hashtags.map((h) => h.text),
    has_media: s.extended_entities !== undefined,
  };
}`,
  outputSchema: NESTED_FIELDS,
};

/** A collection holding both kinds: the nested mapping, flat records mapped onto the same fields. */
export const MIXED_VIEW: ViewScript = {
  script: `function transform(s, ctx) {
  if (s.user === undefined) return { id: s.event, user: s.ctx.ua, followers: s.ts, hashtags: [], has_media: false };
  return {
    id: s.id_str,
    user: s.user.screen_name,
    followers: s.user.followers_count,
    hashtags: s.entities.hashtags.map((h) => h.text),
    has_media: s.extended_entities !== undefined,
  };
}`,
  outputSchema: NESTED_FIELDS,
};
