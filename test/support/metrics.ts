import type { Forgesync } from '../../src/app/forgesync.js';

/** One labelled value of a metric. */
export interface MetricValue {
  labels: Record<string, string | number | undefined>;
  value: number;
}

/**
 * The values of metric `name` in the app's Prometheus registry (the one
 * /metrics serves), by its exposed name: tests read metrics as a scraper
 * would, not through the module that counts them. Throws when no such
 * metric is registered (a renamed metric must fail the test, not read 0).
 */
export async function metricValues(app: Forgesync, name: string): Promise<MetricValue[]> {
  const metric = app.kernel.metrics.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name} is registered`);
  return (await metric.get()).values.map(({ labels, value }) => ({ labels: labels as MetricValue['labels'], value }));
}
