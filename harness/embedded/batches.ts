// Set-up calls over many nodes with a bound on how many are in flight: a
// thousand nodes' requests at once would queue in the API server and the
// connection pool rather than finish sooner.

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function inBatches<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
