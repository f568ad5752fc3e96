import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDemo, type DemoRun } from './demo-run.js';
import { queryProblems, readScrape, type ScrapeNames } from './query-check.js';
import { dashboardQueries, readDashboard, ruleQueries } from './shipped-files.js';

/*
 * The shipped Grafana dashboard and Prometheus rules against what forgesync
 * really exports: a forgesync serves a demo run (a source synced, a webhook,
 * a feed, an import, clones; see demo-run.ts), its /metrics is scraped, and
 * every PromQL expression of both files must name only metrics and labels
 * the scrape has (query-check.ts). A renamed metric or label fails here.
 */

describe('the shipped dashboard and rules against a real scrape', () => {
  let demo: DemoRun;
  let scrape: ScrapeNames;

  beforeAll(async () => {
    demo = await runDemo();
    scrape = readScrape(demo.scrape);
  }, 120_000);
  afterAll(async () => {
    await demo?.close();
  });

  it('scraped the demo run: syncs, webhook, feed, import and clone metrics have samples', () => {
    for (const sample of ['forgesync_syncs_total', 'forgesync_webhooks_total', 'forgesync_feed_delivered_total', 'forgesync_import_requests_total', 'forgesync_pack_cache_lookups_total']) {
      expect(scrape.samples.has(sample), sample).toBe(true);
    }
  });

  it('scraped what the lease, lag, shard and readiness alerts watch, with their labels', () => {
    expect(scrape.samples.get('forgesync_leases_lost_total')).toEqual(new Set(['store', 'reason']));
    expect(scrape.samples.get('forgesync_lease_renewal_failures_total')).toEqual(new Set(['store']));
    expect(scrape.samples.get('forgesync_shard_up')).toEqual(new Set(['shard']));
    expect(scrape.samples.get('forgesync_shard_heartbeat_age_seconds')).toEqual(new Set(['shard']));
    // The demo's one source synced just now, and its process answers /readyz.
    expect(demo.scrape).toMatch(/^forgesync_sources_overdue 0$/m);
    expect(demo.scrape).toMatch(/^forgesync_sync_oldest_success_age_seconds \d/m);
    expect(demo.scrape).toMatch(/^forgesync_ready 1$/m);
    expect(demo.scrape).toMatch(/^forgesync_leases_lost_total\{store="sqlite",reason="expired"\} 0$/m);
  });

  it('is a Grafana dashboard over a ${datasource} Prometheus variable, every panel on it', () => {
    const dashboard = readDashboard();
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }));
    const panels = dashboard.panels.filter((panel) => panel.type !== 'row') as unknown as { title: string; datasource: { uid: string }; targets: { datasource: { uid: string } }[] }[];
    expect(panels.length).toBeGreaterThan(15);
    for (const panel of panels) {
      expect(panel.datasource.uid, panel.title).toBe('${datasource}');
      for (const target of panel.targets) expect(target.datasource.uid, panel.title).toBe('${datasource}');
    }
  });

  it('every dashboard query names only metrics and labels forgesync exports', () => {
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThan(20);
    const problems = queries.flatMap(({ where, expr }) => queryProblems(expr, scrape).map((problem) => `${where}: ${problem}`));
    expect(problems).toEqual([]);
  });

  it('every rule names only metrics and labels forgesync exports (up apart)', () => {
    const queries = ruleQueries();
    expect(queries.length).toBeGreaterThan(10);
    const problems = queries.flatMap(({ where, expr }) => queryProblems(expr, scrape).map((problem) => `${where}: ${problem}`));
    expect(problems).toEqual([]);
  });
});
