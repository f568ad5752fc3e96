import { expressionNames, type Selector } from './promql-selectors.js';

/**
 * Checks PromQL expressions against a `/metrics` scrape: every metric they
 * name must be exported, every label they match on or group by must be on
 * its samples. A scrape says which labels a series has only through its
 * samples, so a labelled metric that nothing counted yet (a counter never
 * incremented) cannot be checked: that is reported too, and the demo run
 * must then exercise it (or the query must not rely on its labels).
 */

/** What one scrape exports: the metric families and, per sample name, the labels seen on its samples. */
export interface ScrapeNames {
  /** Family name → type, from `# TYPE` lines. */
  families: Map<string, string>;
  /** Sample name (a histogram's `_bucket`, `_sum`, `_count` apart) → label names of its samples. */
  samples: Map<string, Set<string>>;
}

/**
 * Labels Prometheus adds to every scraped series (the target's), so queries
 * may match or group on them although `/metrics` never shows them.
 */
export const TARGET_LABELS = ['job', 'instance'] as const;

/**
 * Series that Prometheus makes, not forgesync, with the labels the rules
 * rely on: `up` of each scrape (forgesync exports its readiness and its
 * shards' state itself, so no blackbox probe or per-shard target label is
 * needed any more).
 */
export const EXTERNAL_SERIES: ReadonlyMap<string, readonly string[]> = new Map([['up', [...TARGET_LABELS]]]);

/** Suffixes of the series a histogram or summary family exposes. */
const FAMILY_SUFFIXES: Record<string, readonly string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['_sum', '_count'] };

/** Reads the text exposition format: families from `# TYPE`, label names from each sample line. */
export function readScrape(text: string): ScrapeNames {
  const families = new Map<string, string>();
  const samples = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) families.set(type[1]!, type[2]!);
    const sample = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s/.exec(line);
    if (!sample) continue;
    const labels = samples.get(sample[1]!) ?? new Set<string>();
    for (const [, label] of (sample[3] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="(?:\\.|[^"\\])*"/g)) labels.add(label!);
    samples.set(sample[1]!, labels);
  }
  return { families, samples };
}

/** Whether `name` is exported: a sample name, a family, or a histogram's/summary's suffixed series. */
function exported(scrape: ScrapeNames, name: string): boolean {
  if (scrape.samples.has(name) || scrape.families.has(name)) return true;
  return Object.entries(FAMILY_SUFFIXES).some(([type, suffixes]) =>
    suffixes.some((suffix) => name.endsWith(suffix) && scrape.families.get(name.slice(0, -suffix.length)) === type),
  );
}

/** The labels a series named `name` has once scraped, or undefined when the scrape shows none of its samples. */
function labelsOf(scrape: ScrapeNames, name: string): Set<string> | undefined {
  const external = EXTERNAL_SERIES.get(name);
  if (external) return new Set(external);
  const seen = scrape.samples.get(name);
  return seen ? new Set([...seen, ...TARGET_LABELS]) : undefined;
}

/** The problems of one selector: an unknown metric, labels it lacks or cannot be checked for. */
function selectorProblems(scrape: ScrapeNames, selector: Selector): string[] {
  const { metric, matchers } = selector;
  if (metric === undefined) {
    const everyLabel = new Set([...TARGET_LABELS, ...[...scrape.samples.values()].flatMap((labels) => [...labels])]);
    return matchers.filter((matcher) => !everyLabel.has(matcher.label)).map((matcher) => `no series has the label ${matcher.label}`);
  }
  if (!EXTERNAL_SERIES.has(metric) && !exported(scrape, metric)) return [`no metric ${metric} in the scrape`];
  if (matchers.length === 0) return [];
  const labels = labelsOf(scrape, metric);
  if (!labels) return [`${metric} has no samples in the scrape, so its labels ${matchers.map((matcher) => matcher.label).join(', ')} cannot be checked`];
  return matchers.filter((matcher) => !labels.has(matcher.label)).map((matcher) => `${metric} has no label ${matcher.label}`);
}

/**
 * What is wrong with `expression` against `scrape` (empty: nothing): metrics
 * not exported, matcher labels not on the metric's samples, grouping labels
 * (`by`, `on`, …) on none of the metrics the expression names.
 */
export function queryProblems(expression: string, scrape: ScrapeNames): string[] {
  const { selectors, groupingLabels } = expressionNames(expression);
  const problems = selectors.flatMap((selector) => selectorProblems(scrape, selector));
  const named = selectors.map((selector) => (selector.metric === undefined ? new Set<string>() : labelsOf(scrape, selector.metric)));
  const reachable = new Set<string>([...TARGET_LABELS, ...named.flatMap((labels) => [...(labels ?? [])])]);
  for (const label of groupingLabels) {
    if (!reachable.has(label)) problems.push(`the grouping label ${label} is on none of ${selectors.map((selector) => selector.metric ?? '{…}').join(', ')} (or they have no samples)`);
  }
  return problems;
}
