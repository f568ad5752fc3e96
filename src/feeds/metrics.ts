import { Counter, Gauge, type Registry } from 'prom-client';
import { scrapeRead } from '../util/scrape-read.js';

export interface FeedMetrics {
  delivered: Counter<'feed' | 'operation'>;
  skips: Counter<'feed' | 'operation'>;
}

/** What the gauges read on each scrape. */
export interface FeedGaugeSource {
  lag(): Promise<{ feed: string; changes: number; deadLetters: number }[]>;
}

/** The feeds' metrics; lag and dead letters are read from the registry on each scrape. */
export function feedMetrics(registry: Registry, source: FeedGaugeSource): FeedMetrics {
  const delivered = new Counter({
    name: 'forgesync_feed_delivered_total',
    help: 'Events a sink acknowledged, by feed and operation (partial sync, full sync).',
    labelNames: ['feed', 'operation'] as const,
    registers: [registry],
  });
  const skips = new Counter({
    name: 'forgesync_feed_skips_total',
    help: 'Feed runs skipped because another process held the feed\'s lease (the run\'s request is kept).',
    labelNames: ['feed', 'operation'] as const,
    registers: [registry],
  });
  // One read serves both gauges of a scrape.
  const read = scrapeRead(() => source.lag());
  new Gauge({
    name: 'forgesync_feed_lag_changes',
    help: 'Changes in a feed\'s scope not yet acknowledged by its sink (held back and dead ones included).',
    labelNames: ['feed'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const row of (await read()) ?? []) this.set({ feed: row.feed }, row.changes);
    },
  });
  new Gauge({
    name: 'forgesync_feed_dead_letters',
    help: 'Changes of a feed that failed too often and wait in its dead letters.',
    labelNames: ['feed'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const row of (await read()) ?? []) this.set({ feed: row.feed }, row.deadLetters);
    },
  });
  return { delivered, skips };
}
