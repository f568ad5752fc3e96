/** How long a read's answer serves further gauges: the gauges of one scrape are collected together, well within it. */
const SHARED_MS = 100;

/**
 * One read for all the gauges of a scrape that take their values from it
 * (prom-client collects every metric of a scrape at once): the first
 * gauge's collect() starts `read`, the others take its answer, and the next
 * scrape reads anew. Returns the function the gauges call.
 */
export function scrapeRead<T>(read: () => Promise<T>): () => Promise<T> {
  let reading: Promise<T> | undefined;
  return () => (reading ??= read().finally(() => setTimeout(() => (reading = undefined), SHARED_MS).unref()));
}
