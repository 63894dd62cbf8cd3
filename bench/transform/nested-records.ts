/**
 * Bench data: nested records modelled on social-media statuses (2–5 KB each): a user object,
 * entities with arrays of objects (hashtags, mentions, urls), optional media, reply fields, a
 * quoted status with its own user, a place, nulls. Seeded, so every run sees the same records.
 *
 * Shapes: five optional parts (reply, media, quote, place, possibly_sensitive) give 32
 * combinations; the shape index is drawn from the first 24, and the smaller optional keys (user
 * url, location, banner, video info) follow the shape index, so the data has 24 shapes of keys
 * (whether hashtags, mentions and urls are empty too; their lengths vary within a shape).
 *
 * Key order: with `keyOrders` > 1, record i comes from producer `i % keyOrders`, each with its own
 * stable order of keys in every object (0: as built; 1: sorted, like `json.dumps(sort_keys=True)`;
 * 2 and up: a fixed per-producer permutation). Shapes do not change (identity ignores key order),
 * but a pipeline fast path keyed on the byte layout of a shape meets several layouts per shape, as
 * it does when several SDKs write to one collection.
 */
import { mulberry32 } from '../../test/helpers/seeded-random.js';

export const NESTED_SHAPES = 24;

const WORDS =
  'the a of to and in is it you that he was for on are with as I his they be at one have this from or had by hot word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find any new work part take get place made live where after back little only round man year came show every good me give our under name very through just form sentence great think say help low line differ turn cause much mean before move right boy old too same tell does set three want air well also play small end put home read hand port large spell add even land here must big high such follow act why ask men change went light kind off need house picture try us again animal point mother world near build self earth father'.split(
    ' ',
  );
const TAGS = [
  'rust',
  'typescript',
  'nodejs',
  'bigdata',
  'analytics',
  'opensource',
  'devops',
  'cloud',
  'ml',
  'ai',
  'sre',
  'observability',
  'postgres',
  'duckdb',
  'parquet',
];
const CLIENTS = [
  'Twitter for iPhone',
  'Twitter for Android',
  'Twitter Web App',
  'TweetDeck',
  'Buffer',
  'Hootsuite Inc.',
];
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

type Rand = () => number;
const int = (r: Rand, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const words = (r: Rand, n: number) => Array.from({ length: n }, () => pick(r, WORDS)).join(' ');
const handle = (r: Rand) => `${pick(r, WORDS)}_${pick(r, WORDS)}${int(r, 1, 9999)}`;

function twitterDate(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000 ${d.getUTCFullYear()}`;
}

function user(r: Rand, ms: number, shape: number): Record<string, unknown> {
  const id = int(r, 1e6, 9e15);
  const name = handle(r);
  const url = shape % 3 !== 0 ? `https://t.co/${handle(r).slice(0, 10)}` : null;
  return {
    id,
    id_str: String(id),
    name: words(r, 2),
    screen_name: name,
    location: shape % 4 !== 1 ? words(r, 2) : null,
    description: words(r, int(r, 3, 8)),
    url,
    entities: {
      url:
        url === null
          ? undefined
          : {
              urls: [
                {
                  url,
                  expanded_url: `https://${pick(r, WORDS)}.example.com/${pick(r, WORDS)}`,
                  display_url: `${pick(r, WORDS)}.example.com`,
                  indices: [0, 23],
                },
              ],
            },
      description: { urls: [] },
    },
    protected: false,
    followers_count: int(r, 0, 2_000_000),
    friends_count: int(r, 0, 5000),
    listed_count: int(r, 0, 900),
    created_at: twitterDate(ms - int(r, 1, 3000) * 86_400_000),
    favourites_count: int(r, 0, 100_000),
    utc_offset: null,
    time_zone: null,
    geo_enabled: r() < 0.3,
    verified: r() < 0.05,
    statuses_count: int(r, 1, 300_000),
    lang: null,
    profile_background_color: 'F5F8FA',
    profile_image_url_https: `https://pbs.twimg.com/profile_images/${int(r, 1e9, 9e9)}/${pick(r, WORDS)}_normal.jpg`,
    profile_banner_url: shape % 5 < 3 ? `https://pbs.twimg.com/profile_banners/${id}/${int(r, 1e9, 9e9)}` : undefined,
    profile_link_color: '1DA1F2',
    default_profile: r() < 0.5,
    default_profile_image: false,
    following: null,
    follow_request_sent: null,
    notifications: null,
  };
}

function entities(r: Rand, text: string, shape: number): Record<string, unknown> {
  const hashtags = Array.from({ length: shape % 2 === 0 ? int(r, 1, 4) : 0 }, () => {
    const at = int(r, 0, Math.max(0, text.length - 10));
    return { text: pick(r, TAGS), indices: [at, at + 8] };
  });
  const mentions = Array.from({ length: shape % 3 !== 2 ? int(r, 1, 3) : 0 }, () => {
    const id = int(r, 1e6, 9e15);
    return {
      screen_name: handle(r),
      name: words(r, 2),
      id,
      id_str: String(id),
      indices: [int(r, 0, 40), int(r, 41, 60)],
    };
  });
  const urls = Array.from({ length: shape % 4 !== 3 ? int(r, 1, 2) : 0 }, () => ({
    url: `https://t.co/${handle(r).slice(0, 10)}`,
    expanded_url: `https://${pick(r, WORDS)}.example.org/${words(r, 3).replaceAll(' ', '-')}`,
    display_url: `${pick(r, WORDS)}.example.org/…`,
    indices: [int(r, 0, 100), int(r, 101, 140)],
  }));
  return { hashtags, symbols: [], user_mentions: mentions, urls };
}

function media(r: Rand, shape: number): Record<string, unknown>[] {
  return Array.from({ length: int(r, 1, 2) }, () => {
    const id = int(r, 1e15, 9e15);
    const video = shape % 7 === 3;
    const size = (w: number, h: number, resize: string) => ({ w, h, resize });
    return {
      id,
      id_str: String(id),
      indices: [int(r, 100, 200), int(r, 201, 240)],
      media_url_https: `https://pbs.twimg.com/media/${handle(r)}.jpg`,
      url: `https://t.co/${handle(r).slice(0, 10)}`,
      display_url: `pic.twitter.com/${handle(r).slice(0, 10)}`,
      expanded_url: `https://twitter.com/${handle(r)}/status/${id}/photo/1`,
      type: video ? 'video' : 'photo',
      sizes: {
        thumb: size(150, 150, 'crop'),
        small: size(680, 383, 'fit'),
        medium: size(1200, 675, 'fit'),
        large: size(1920, 1080, 'fit'),
      },
      ...(video
        ? {
            video_info: {
              aspect_ratio: [16, 9],
              duration_millis: int(r, 1000, 140_000),
              variants: [
                {
                  bitrate: 832000,
                  content_type: 'video/mp4',
                  url: `https://video.twimg.com/${id}/vid/640x360/${handle(r)}.mp4`,
                },
                { content_type: 'application/x-mpegURL', url: `https://video.twimg.com/${id}/pl/${handle(r)}.m3u8` },
              ],
            },
          }
        : {}),
    };
  });
}

function status(r: Rand, i: number, shape: number, ms: number, depth: number): Record<string, unknown> {
  const id = 1_500_000_000_000_000_000 + i * 1000 + int(r, 0, 999);
  const text = words(r, int(r, 8, 30)).slice(0, 280);
  const reply = (shape & 1) !== 0;
  const withMedia = (shape & 2) !== 0;
  const quote = depth === 0 && (shape & 4) !== 0;
  const place = (shape & 8) !== 0;
  const sensitive = (shape & 16) !== 0;
  const ents = entities(r, text, shape);
  const m = withMedia ? media(r, shape) : null;
  if (m !== null) ents.media = m.map(({ video_info: _v, ...rest }) => rest);
  const s: Record<string, unknown> = {
    created_at: twitterDate(ms),
    id,
    id_str: String(id),
    text,
    source: `<a href="https://mobile.twitter.com" rel="nofollow">${pick(r, CLIENTS)}</a>`,
    truncated: false,
    ...(reply
      ? {
          in_reply_to_status_id: id - int(r, 1, 1e9),
          in_reply_to_status_id_str: String(id - 5),
          in_reply_to_user_id: int(r, 1e6, 9e15),
          in_reply_to_user_id_str: String(int(r, 1e6, 9e15)),
          in_reply_to_screen_name: handle(r),
        }
      : {}),
    user:
      depth === 0
        ? user(r, ms, shape)
        : {
            id: int(r, 1e6, 9e15),
            screen_name: handle(r),
            name: words(r, 2),
            verified: false,
            followers_count: int(r, 0, 1e6),
          },
    geo: null,
    coordinates: place ? { type: 'Point', coordinates: [r() * 360 - 180, r() * 180 - 90] } : null,
    place: place
      ? {
          id: handle(r),
          url: `https://api.twitter.com/1.1/geo/id/${int(r, 1e6, 9e6)}.json`,
          place_type: 'city',
          name: pick(r, WORDS),
          full_name: words(r, 2),
          country_code: 'US',
          country: 'United States',
          bounding_box: {
            type: 'Polygon',
            coordinates: [
              [
                [-74.02, 40.7],
                [-73.9, 40.7],
                [-73.9, 40.88],
                [-74.02, 40.88],
              ],
            ],
          },
          attributes: {},
        }
      : null,
    contributors: null,
    is_quote_status: quote,
    ...(quote
      ? {
          quoted_status_id: id - 77,
          quoted_status_id_str: String(id - 77),
          quoted_status: status(r, i + 1, shape & ~2 & ~4 & ~16, ms - 60_000, 1),
        }
      : {}),
    retweet_count: int(r, 0, 50_000),
    favorite_count: int(r, 0, 200_000),
    entities: ents,
    ...(m !== null ? { extended_entities: { media: m } } : {}),
    favorited: false,
    retweeted: false,
    ...(sensitive ? { possibly_sensitive: r() < 0.1 } : {}),
    filter_level: 'low',
    lang: r() < 0.9 ? 'en' : 'und',
    timestamp_ms: String(ms),
  };
  return s;
}

export interface NestedOptions {
  /** Distinct key orders (producers), 1 to 8; default 1: every record in the order it is built. */
  keyOrders?: number;
}

/** `n` status records, seeded (the same `seed` gives the same records); ~2–5 KB of JSON each. */
export function makeNestedRecords(n: number, seed = 1, opts: NestedOptions = {}): Record<string, unknown>[] {
  const keyOrders = opts.keyOrders ?? 1;
  if (!Number.isInteger(keyOrders) || keyOrders < 1 || keyOrders > 8)
    throw new Error(`keyOrders must be an integer from 1 to 8, not ${keyOrders}`);
  const r = mulberry32(seed);
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const shape = int(r, 0, NESTED_SHAPES - 1);
    // Round trip: drops undefined keys, as records from the spool would be.
    const record = JSON.parse(JSON.stringify(status(r, i, shape, 1767225600000 + i * 250, 0))) as Record<
      string,
      unknown
    >;
    const producer = i % keyOrders;
    out.push(producer === 0 ? record : (reorder(record, producer) as Record<string, unknown>));
  }
  return out;
}

/** Rank of `key` in producer `p`'s order (p ≥ 2): a hash of both, so each producer has its own stable order. */
function rank(key: string, p: number): number {
  let h = 0x811c9dc5 ^ p;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** `value` with every object's keys in producer `p`'s order (arrays keep their element order). */
function reorder(value: unknown, p: number): unknown {
  if (Array.isArray(value)) return value.map((v) => reorder(v, p));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  if (p === 1) keys.sort();
  else keys.sort((a, b) => rank(a, p) - rank(b, p) || (a < b ? -1 : 1));
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = reorder((value as Record<string, unknown>)[k], p);
  return out;
}
