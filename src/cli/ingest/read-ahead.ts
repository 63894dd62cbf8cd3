/**
 * `source` read up to `ahead` items in advance: the next batches are read and checked while the
 * ones in flight wait for their answers, so a slot that frees up is filled at once. (Reading only
 * when a slot was free left two of four slots empty much of the time when the CLI shared the CPU
 * with the server it fed; bench/cli.) Memory: at most `ahead` items besides the consumer's. A
 * failure of the source is thrown to the consumer at the point it was reached.
 */
export async function* readAhead<T>(source: AsyncIterable<T>, ahead: number): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  const queue: Array<Promise<IteratorResult<T>>> = [];
  let ended = false;
  const fill = () => {
    while (!ended && queue.length < ahead) {
      const next = it.next();
      // Stop asking once the source says it is done (or failed); the consumer sees why in order.
      next.then(
        (r) => {
          if (r.done) ended = true;
        },
        () => {
          ended = true;
        },
      );
      queue.push(next);
    }
  };
  try {
    for (;;) {
      fill();
      const r = await queue.shift()!;
      if (r.done) return;
      yield r.value;
    }
  } finally {
    // The consumer stopped early (a failure, Ctrl-C): let the source close its file.
    if (!ended) await it.return?.();
  }
}
