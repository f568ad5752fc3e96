/** How long a read's answer serves further gauges: the gauges of one scrape are collected together, well within it. */
const SHARED_MS = 100;

/**
 * One read for all the gauges of a scrape that take their values from it
 * (prom-client collects every metric of a scrape at once): the first
 * gauge's collect() starts `read`, the others take its answer, and the next
 * scrape reads anew. A read that fails answers undefined, and its gauges set
 * nothing: prom-client fails the whole scrape when one collect() throws, and
 * a database that is down must not hide every other metric (forgesync_ready
 * 0 among them). Returns the function the gauges call.
 */
export function scrapeRead<T>(read: () => Promise<T>): () => Promise<T | undefined> {
  let reading: Promise<T | undefined> | undefined;
  return () =>
    (reading ??= read()
      .catch(() => undefined)
      .finally(() => setTimeout(() => (reading = undefined), SHARED_MS).unref()));
}
