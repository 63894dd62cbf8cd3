import { onAnswers } from './http-answers.js';
import { connect, type Socket } from 'node:net';

/** An open-loop (fixed offered rate) HTTP load over loopback. */
export interface OpenLoad {
  port: number;
  /** Path with query, e.g. `/ingest?key=…`. */
  path: string;
  body: Buffer;
  /** The body of request `i`, built when it goes out (default: `body` every time). */
  bodyAt?: (i: number) => Buffer;
  /** Sees each answer: the request's index, its status and when it arrived (performance.now()). */
  onAnswer?: (i: number, status: number, at: number) => void;
  contentType: string;
  /** Offered requests per second, kept whatever the answers do. */
  rate: number;
  /** Keep-alive connections opened before the run; a request goes out on an idle one. */
  connections: number;
  durationMs: number;
  /** After the schedule ends, wait at most this long for the last answers (default 5 s). */
  graceMs?: number;
}

export interface OpenLoopResult {
  /** Requests scheduled (rate × duration). */
  scheduled: number;
  /** 2xx answers, other answers, and requests with no answer by the end of the grace period. */
  ok: number;
  failed: number;
  unanswered: number;
  /** Seconds of the schedule. */
  seconds: number;
  /** Answers per second, over the schedule's duration or until the last answer when that is later. */
  achievedRate: number;
  /** Latency of each answer, ms, counted from its *scheduled* send time (no coordinated omission). */
  latencies: Float64Array;
  /** Most requests that waited in the generator for a free connection at once (0: the pool never ran dry). */
  maxBacklog: number;
}

/**
 * Open-loop load generator: requests are due at `start + i / rate` whether or not earlier ones were
 * answered, and each latency is measured from that due time, so a server that stalls is charged for
 * every request it delayed (closed-loop clients send less while it stalls: coordinated omission).
 * A timer releases the requests that are due; each goes out on an idle keep-alive connection, or
 * waits in the generator for one (no pipelining) — the wait counts in its latency.
 */
export async function openLoopLoad(opts: OpenLoad): Promise<OpenLoopResult> {
  const requestOf = (body: Buffer) =>
    Buffer.concat([
      Buffer.from(
        `POST ${opts.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${opts.contentType}\r\nContent-Length: ${body.length}\r\n\r\n`,
      ),
      body,
    ]);
  const fixed = requestOf(opts.body);
  const bodyAt = opts.bodyAt;
  const intervalMs = 1000 / opts.rate;
  const total = Math.max(1, Math.round((opts.rate * opts.durationMs) / 1000));
  const latencies = new Float64Array(total);
  let answered = 0;
  let lastAnswer = 0;
  let ok = 0;
  let failed = 0;
  let scheduledCount = 0;
  let start = 0;
  /** Indexes of requests waiting for a connection, oldest first (a ring would do; a plain array is cheap at these depths). */
  const backlog: number[] = [];
  let backlogHead = 0;
  let maxBacklog = 0;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));

  interface Conn {
    socket: Socket;
    /** Index of the request in flight on it, or -1 when idle. */
    index: number;
  }
  const idle: Conn[] = [];
  // Request i is due at start + i × interval, whenever it goes out.
  const dueOf = (i: number) => start + i * intervalMs;
  const send = (c: Conn, i: number) => {
    c.index = i;
    c.socket.write(bodyAt ? requestOf(bodyAt(i)) : fixed);
  };
  const next = (c: Conn) => {
    if (backlogHead < backlog.length) {
      send(c, backlog[backlogHead++]!);
      if (backlogHead > 4096 && backlogHead * 2 > backlog.length) {
        backlog.splice(0, backlogHead);
        backlogHead = 0;
      }
    } else {
      c.index = -1;
      idle.push(c);
    }
  };
  const onAnswer = (c: Conn, status: number) => {
    const now = performance.now();
    lastAnswer = now;
    latencies[answered++] = now - dueOf(c.index);
    if (status >= 200 && status < 300) ok++;
    else failed++;
    opts.onAnswer?.(c.index, status, now);
    if (answered === scheduledCount && scheduledCount === total) finish();
    if (status === 503) {
      // The server closes the connection after a refusal (docs/ingest.md, "Refusals"): a new one
      // takes its place in the pool, so refusals do not shrink it.
      c.socket.destroy();
      void open().then(
        (fresh) => {
          conns.push(fresh);
          watch(fresh);
          next(fresh);
        },
        () => {},
      );
      return;
    }
    next(c);
  };

  const open = () =>
    new Promise<Conn>((resolve, reject) => {
      const socket = connect(opts.port, '127.0.0.1');
      socket.setNoDelay(true);
      const c: Conn = { socket, index: -1 };
      socket.once('connect', () => resolve(c));
      socket.once('error', reject);
      onAnswers(socket, (status) => onAnswer(c, status));
    });
  const watch = (c: Conn) => {
    // A connection the server closes drops out of the pool (its request, if any, stays unanswered).
    c.socket.on('close', () => {
      const i = idle.indexOf(c);
      if (i !== -1) idle.splice(i, 1);
    });
    c.socket.on('error', () => {});
  };
  const conns = await Promise.all(Array.from({ length: opts.connections }, open));
  for (const c of conns) {
    watch(c);
    idle.push(c);
  }

  start = performance.now();
  const tick = () => {
    const now = performance.now();
    const due = Math.min(total, Math.floor((now - start) / intervalMs) + 1);
    while (scheduledCount < due) {
      const i = scheduledCount++;
      const c = idle.pop();
      if (c) send(c, i);
      else backlog.push(i);
    }
    maxBacklog = Math.max(maxBacklog, backlog.length - backlogHead);
    if (scheduledCount < total) setTimeout(tick, Math.max(0, dueOf(scheduledCount) - performance.now()));
    else if (answered === total) finish();
  };
  tick();
  const grace = new Promise<void>((resolve) => {
    const t = setTimeout(resolve, opts.durationMs + (opts.graceMs ?? 5000));
    void finished.then(() => clearTimeout(t));
  });
  await Promise.race([finished, grace]);
  const seconds = opts.durationMs / 1000;
  // Answers that came in after the schedule ended stretch the time they are counted over.
  const answerSeconds = Math.max(seconds, (lastAnswer - start) / 1000);
  for (const c of conns) c.socket.destroy();
  return {
    scheduled: scheduledCount,
    ok,
    failed,
    unanswered: scheduledCount - answered,
    seconds,
    achievedRate: answered / answerSeconds,
    latencies: latencies.subarray(0, answered),
    maxBacklog,
  };
}
