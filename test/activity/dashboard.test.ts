import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActivitySeries, FailureGroup } from '../../src/activity/api.js';
import { readRollup } from '../../src/activity/store/rollup.js';
import { activityDb } from '../../src/activity/store/tables.js';
import { eventually } from '../support/harness.js';
import { Upstream } from '../support/upstream.js';
import { testSecret } from '../support/secrets.js';
import { exactly, openBrowserPage, textOf as textOfPage } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

/*
 * The dashboard's Activity page in Debian's headless chromium, over a real
 * `forgesync serve` API on SQLite that samples its metrics every second:
 * one source synced from a temp git repository, two whose upstreams lost
 * their objects (their syncs fail alike: one failure group). The charts'
 * legends are checked against the rollup rows in the database, the group
 * against the registry, and its Resync button against the sources' rows.
 * No worker runs: the requests the button records stay pending.
 */

const ADMIN_TOKEN = testSecret('ADMIN_TOKEN');
const OUTPUT_DIR = fileURLToPath(new URL('../../test-output/', import.meta.url));
const BROKEN = ['broken-one', 'broken-two'];

/** An upstream whose objects are gone: its refs are listed, the clone fails. */
function brokenUpstream(): Upstream {
  const upstream = Upstream.create();
  for (const entry of readdirSync(join(upstream.bare, 'objects'))) {
    if (/^[0-9a-f]{2}$|^pack$/.test(entry)) rmSync(join(upstream.bare, 'objects', entry), { recursive: true });
  }
  return upstream;
}

describe('dashboard activity page in headless chromium', () => {
  let t: TestServer;
  let browser: Browser;
  let page: Page;
  let pageErrors: string[] = [];

  beforeAll(async () => {
    t = await startTestServer({ listen: true, tokens: { admin: ADMIN_TOKEN }, env: { FORGESYNC_ACTIVITY_SAMPLE_INTERVAL: '1s' } });
    const { replication } = t.app;
    const upstream = Upstream.create();
    await replication.addSource({ name: 'alpha', url: upstream.bare });
    expect((await replication.sync('alpha')).served).toBe(true);
    upstream.commit('main');
    expect((await replication.sync('alpha')).served).toBe(true);
    for (const name of BROKEN) {
      await replication.addSource({ name, url: brokenUpstream().bare });
      expect((await replication.sync(name)).registry.state).toBe('failed');
    }
    ({ browser, page, pageErrors } = await openBrowserPage());
    mkdirSync(OUTPUT_DIR, { recursive: true });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const textOf = (selector: string, expected: RegExp) => textOfPage(page, selector, expected);
  const legend = (chart: string, series: string) => `[data-chart="${chart}"] tr[data-series="${series}"] [data-field="total"]`;

  /** The sum over the last hour's minute rows of `metric` with `labels`, read from the database. */
  async function rollupTotal(metric: string, labels: object): Promise<number> {
    const rows = await readRollup(activityDb(t.app.kernel.database), 'minute', Date.now() - 3_600_000);
    return rows.filter((row) => row.metric === metric && row.labels === JSON.stringify(labels)).reduce((sum, row) => sum + row.total, 0);
  }

  it('serves the chart library from the installed package, and the page, under the dashboard\'s CSP', async () => {
    const files = { 'vendor/uPlot.esm.js': /^text\/javascript/, 'vendor/uPlot.min.css': /^text\/css/, 'activity/activity.js': /^text\/javascript/, 'activity/activity.css': /^text\/css/ };
    for (const [file, type] of Object.entries(files)) {
      const response = await fetch(`${t.url}/dashboard/${file}`);
      expect(response.status, file).toBe(200);
      expect(response.headers.get('content-type'), file).toMatch(type);
      expect(response.headers.get('content-security-policy'), file).toMatch(/default-src 'self'; script-src 'self'/);
      expect(response.headers.get('x-content-type-options'), file).toBe('nosniff');
    }
    expect(await (await fetch(`${t.url}/dashboard/vendor/uPlot.esm.js`)).text()).toContain('export { uPlot as default }');
    expect((await fetch(`${t.url}/api/activity/series?range=hour`)).status).toBe(401);
    expect((await fetch(`${t.url}/api/activity/series?range=year`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(400);
  });

  it('draws the syncs and their durations from the rollup, and groups the two alike failures with a resync for both', async () => {
    // The sampler (every second) has added the four syncs to the rollup.
    await eventually('the rollup to hold the syncs', async () => ((await rollupTotal('forgesync_syncs_total', { result: 'failed' })) >= 2 ? true : null));
    const synced = await rollupTotal('forgesync_syncs_total', { result: 'synced' });
    const failed = await rollupTotal('forgesync_syncs_total', { result: 'failed' });
    expect(synced).toBe(2);
    expect(failed).toBe(2);
    const observed = await rollupTotal('forgesync_sync_duration_seconds_count', {});
    expect(observed).toBe(4);
    const series = await t.getJson<ActivitySeries>('/api/activity/series?range=hour');
    expect(series.times).toHaveLength(60);
    expect(series.charts.find((chart) => chart.id === 'syncs')?.series.map((each) => [each.label, each.total])).toEqual([
      ['failed', failed],
      ['synced', synced],
    ]);

    await page.goto(`${t.url}/#token=${encodeURIComponent(ADMIN_TOKEN)}`);
    await page.click('nav a[data-nav=activity]');
    await page.locator('#activity-view').waitFor({ state: 'visible' });
    await textOf(legend('syncs', 'synced'), exactly(synced));
    await textOf(legend('syncs', 'failed'), exactly(failed));
    // uPlot drew each chart with data: a canvas, and its own legend naming the series.
    expect(await page.locator('#activity-chart-syncs canvas').count()).toBeGreaterThan(0);
    expect(await page.locator('#activity-chart-syncs .u-legend').textContent()).toMatch(/failed.*synced/s);
    // The values drawn: hovering over the newest minute with syncs, uPlot's legend shows that minute's rows.
    const { times } = series;
    const syncs = series.charts.find((chart) => chart.id === 'syncs')!;
    const index = times.findLastIndex((_, at) => syncs.series.some((each) => (each.values[at] ?? 0) > 0));
    const minute = (await readRollup(activityDb(t.app.kernel.database), 'minute', times[index]!)).filter((row) => row.bucketAt === times[index] && row.metric === 'forgesync_syncs_total');
    const plot = await page.locator('#activity-chart-syncs .u-over').boundingBox();
    // Inside the plot's edge (the cursor snaps to the nearest minute).
    await page.mouse.move(plot!.x + Math.min((plot!.width * index) / (times.length - 1), plot!.width - 2), plot!.y + plot!.height / 2, { steps: 4 });
    // uPlot's legend rows: the time, then the series in the answer's order.
    for (const [at, { label }] of syncs.series.entries()) {
      const drawn = minute.find((row) => row.labels === JSON.stringify({ result: label }))?.total ?? 0;
      await textOf(`#activity-chart-syncs .u-legend tr.u-series:nth-child(${at + 2}) td.u-value`, exactly(drawn));
    }
    await textOf(legend('duration', 'p50'), /^latest \d/);
    for (const chart of ['webhooks', 'feeds']) await textOf(`[data-chart="${chart}"] [data-field="empty"]`, /Nothing recorded/);

    // One group: the same error of two sources, with their paths and hashes as placeholders.
    const groups = await t.getJson<(Omit<FailureGroup, 'firstSeenAt' | 'lastSeenAt' | 'sourceIds'> & { firstSeenAt: string; lastSeenAt: string })[]>('/api/activity/failures');
    expect(groups).toHaveLength(1);
    const [group] = groups;
    expect(group).toMatchObject({ count: 2, sources: BROKEN });
    const failures = (await t.app.replication.listSources({ state: 'failed' })).map((source) => source.registry.lastFailureAt!.getTime());
    expect(Date.parse(group!.lastSeenAt)).toBe(Math.max(...failures));
    expect(Date.parse(group!.firstSeenAt)).toBe(Math.min(...failures));
    const row = `tr[data-group="${group!.id}"]`;
    await textOf(`${row} [data-field="count"]`, /^2$/);
    await textOf(`${row} [data-field="sources"]`, exactly(BROKEN.join(', ')));
    await textOf(`${row} [data-field="message"]`, /<tmp>|<hash>|<n>/);
    const shots = [`${OUTPUT_DIR}dashboard-activity-hour.png`];
    await page.screenshot({ path: shots[0]!, fullPage: true });

    // The month: the same syncs in this hour's bucket (the minutes not folded yet count).
    await page.click('#activity-ranges a[data-range=month]');
    await textOf('#activity-ranges a[aria-current=true]', /^Last month$/);
    await textOf(legend('syncs', 'synced'), exactly(synced));

    await page.click(`${row} button[data-action=resync]`);
    await page.click('#confirm-ok');
    await textOf('#flash', /^Sync requested for 2 sources\.$/);
    for (const name of BROKEN) expect((await t.app.replication.getSource(name)).registry.state).toBe('pending');
    expect((await t.app.replication.getSource('alpha')).registry.state).toBe('synced');
    shots.push(`${OUTPUT_DIR}dashboard-activity-resync.png`);
    await page.screenshot({ path: shots[1]!, fullPage: true });
    console.log(`activity dashboard screenshots: ${shots.join(', ')}`);
    expect(pageErrors).toEqual([]);
  }, 120_000);
});
