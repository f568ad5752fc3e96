import type { MetricObjectWithValues, MetricValue, MetricValueWithName, Registry } from 'prom-client';
import type { SeriesDeclaration } from './series.js';

/** What one sample adds to one series' row of the current minute. */
export interface SeriesDelta {
  metric: string;
  /** The kept labels as JSON with sorted keys (`{"result":"failed"}`), `{}` for none. */
  labels: string;
  /** Counters and histograms: the increase; gauges: the value (summed over samples: the mean is total / samples). */
  total: number;
  /** Gauges: the value (the row keeps the highest); counters and histograms: 0. */
  peak: number;
  /** Gauges: 1 (the row counts them); counters and histograms: 0. */
  samples: number;
}

/**
 * Reads the declared series from a prom-client registry and turns them
 * into what happened since the previous read. Counters and histogram
 * buckets are cumulative: the delta is the value minus the last one read,
 * or the whole value when it went down (the metric was reset). The first
 * read counts from zero, as the metrics of this process did: nothing that
 * happened between the start and the first sample is lost.
 */
export class RegistrySampler {
  readonly #last = new Map<string, number>();

  constructor(
    private readonly registry: Pick<Registry, 'getSingleMetric'>,
    private readonly series: readonly SeriesDeclaration[],
  ) {}

  /** The deltas since the last call; series with nothing new are left out. */
  async sample(): Promise<SeriesDelta[]> {
    const deltas: SeriesDelta[] = [];
    for (const declaration of this.series) {
      const metric = this.registry.getSingleMetric(declaration.metric);
      // A metric this process does not register (the pack cache when off) has nothing to add.
      if (!metric) continue;
      const read = (await metric.get()) as MetricObjectWithValues<MetricValue<string>>;
      const summed = sumByKeptLabels(read.values, declaration);
      if (declaration.kind === 'gauge') {
        for (const [key, value] of summed) deltas.push({ ...splitKey(key), total: value, peak: value, samples: 1 });
        continue;
      }
      for (const [key, value] of summed) {
        const last = this.#last.get(key) ?? 0;
        this.#last.set(key, value);
        const increase = value >= last ? value - last : value;
        if (increase > 0) deltas.push({ ...splitKey(key), total: increase, peak: 0, samples: 0 });
      }
    }
    return deltas;
  }
}

/** `earlier` and `later` as one sample: the same series' totals and samples added, the higher peak. */
export function mergeDeltas(earlier: readonly SeriesDelta[], later: readonly SeriesDelta[]): SeriesDelta[] {
  const merged = new Map<string, SeriesDelta>();
  for (const delta of [...earlier, ...later]) {
    const key = seriesKey(delta.metric, delta.labels);
    const sum = merged.get(key);
    merged.set(key, sum ? { ...sum, total: sum.total + delta.total, peak: Math.max(sum.peak, delta.peak), samples: sum.samples + delta.samples } : { ...delta });
  }
  return [...merged.values()];
}

/** Values summed by (metric name, kept labels); histograms keep `le` on their buckets. */
function sumByKeptLabels(values: readonly (MetricValue<string> | MetricValueWithName<string>)[], declaration: SeriesDeclaration): Map<string, number> {
  const sums = new Map<string, number>();
  const keep = declaration.kind === 'histogram' ? [...declaration.keep, 'le'] : declaration.keep;
  for (const value of values) {
    const name = 'metricName' in value && value.metricName ? value.metricName : declaration.metric;
    const labels: Record<string, string> = {};
    for (const label of [...keep].sort()) {
      const given = (value.labels as Record<string, string | number | undefined>)[label];
      if (given !== undefined) labels[label] = String(given);
    }
    const key = seriesKey(name, JSON.stringify(labels));
    sums.set(key, (sums.get(key) ?? 0) + value.value);
  }
  return sums;
}

const SEPARATOR = '\u0000';
const seriesKey = (metric: string, labels: string) => `${metric}${SEPARATOR}${labels}`;

function splitKey(key: string): { metric: string; labels: string } {
  const at = key.indexOf(SEPARATOR);
  return { metric: key.slice(0, at), labels: key.slice(at + 1) };
}
