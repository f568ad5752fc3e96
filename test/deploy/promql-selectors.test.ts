import { describe, expect, it } from 'vitest';
import { expressionNames, PromqlSyntaxError } from './promql-selectors.js';

/*
 * The PromQL reader the query check relies on: it must find every metric and
 * label an expression names (a miss would let a wrong query through) and
 * nothing else (a function or keyword taken for a metric would fail a good one).
 */

const metrics = (expression: string) => expressionNames(expression).selectors.map((selector) => selector.metric);

describe('expressionNames', () => {
  it('finds a bare metric and one with matchers of every operator', () => {
    expect(expressionNames('forgesync_lease_skips_total')).toEqual({ selectors: [{ metric: 'forgesync_lease_skips_total', matchers: [] }], groupingLabels: [] });
    const { selectors } = expressionNames(`forgesync_syncs_total{result="failed", trigger!='cli',provider=~"git.*",le!~"\\"x"}`);
    expect(selectors).toEqual([
      {
        metric: 'forgesync_syncs_total',
        matchers: [
          { label: 'result', op: '=', value: 'failed' },
          { label: 'trigger', op: '!=', value: 'cli' },
          { label: 'provider', op: '=~', value: 'git.*' },
          { label: 'le', op: '!~', value: '"x' },
        ],
      },
    ]);
  });

  it('skips functions, aggregations, keywords, numbers, durations, ranges, subqueries and offsets', () => {
    const expression = `histogram_quantile(0.95, sum by (le) (rate(forgesync_sync_duration_seconds_bucket[5m] offset 1h))) > bool 1e3
      and on() min_over_time(max(forgesync_registry_sources{state="pending"})[1h:1m]) > 0
      unless ignoring(instance) absent(up) or vector(0) + Inf * NaN`;
    expect(metrics(expression)).toEqual(['forgesync_sync_duration_seconds_bucket', 'forgesync_registry_sources', 'up']);
    expect(expressionNames(expression).groupingLabels).toEqual(['le', 'instance']);
  });

  it('collects the labels of by, without, on, ignoring and group_left/right clauses, before or after the body', () => {
    const expression = `sum(rate(a_total[5m])) by (provider, result) / on(feed) group_left(stage) max without (instance) (b) * ignoring(x) group_right c`;
    expect(expressionNames(expression).groupingLabels).toEqual(['provider', 'result', 'feed', 'stage', 'instance', 'x']);
    expect(metrics(expression)).toEqual(['a_total', 'b', 'c']);
  });

  it('reads a selector without a name before the braces, by __name__ or by label only', () => {
    expect(expressionNames('{__name__="forgesync_feed_lag_changes", feed="a"}').selectors).toEqual([{ metric: 'forgesync_feed_lag_changes', matchers: [{ label: 'feed', op: '=', value: 'a' }] }]);
    expect(expressionNames('{job="forgesync"}').selectors).toEqual([{ metric: undefined, matchers: [{ label: 'job', op: '=', value: 'forgesync' }] }]);
  });

  it('takes Grafana variables as opaque values in ranges and matchers', () => {
    const { selectors } = expressionNames('sum by (feed) (rate(forgesync_feed_delivered_total{feed=~"$feed", instance=~"${instance:regex}"}[$__rate_interval]))');
    expect(selectors).toEqual([
      {
        metric: 'forgesync_feed_delivered_total',
        matchers: [
          { label: 'feed', op: '=~', value: '$feed' },
          { label: 'instance', op: '=~', value: '${instance:regex}' },
        ],
      },
    ]);
  });

  it('ignores strings outside matchers (label_replace arguments, count_values) and comments', () => {
    const expression = `label_replace(forgesync_import_stage, "to", "$1", "stage", "(.*)") # not_a_metric here
      + count_values("value", forgesync_mirror_objects)`;
    expect(metrics(expression)).toEqual(['forgesync_import_stage', 'forgesync_mirror_objects']);
  });

  it('refuses what it cannot read rather than guess', () => {
    expect(() => expressionNames('a{b="c"')).toThrow(PromqlSyntaxError);
    expect(() => expressionNames('a{b}')).toThrow(/malformed label matcher/);
    expect(() => expressionNames('rate(a[5m)')).toThrow(/unclosed range/);
    expect(() => expressionNames('a ~ b')).toThrow(/unexpected "~ b"/);
  });
});
