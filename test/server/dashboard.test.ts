import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { createTestDatabase, eventually, openTestForgesync, refsOf, testConfig } from '../support/harness.js';
import { Upstream } from '../support/upstream.js';
import { testSecret } from '../support/secrets.js';
import { openBrowserPage, textOf as textOfPage } from '../support/browser.js';

/*
 * End to end: a real `forgesync serve` (API, scheduler, workers) on a random
 * port, driven through the dashboard in Debian's headless chromium. Never
 * downloads a browser; a missing chromium fails the suite with the fix.
 */

const ADMIN_TOKEN = testSecret('ADMIN_TOKEN');
const OUTPUT_DIR = fileURLToPath(new URL('../../test-output/', import.meta.url));

describe('dashboard in headless chromium', () => {
  let app: Forgesync;
  let server: ForgesyncServer;
  let browser: Browser;
  let page: Page;
  let baseUrl: string;
  /** Console errors and uncaught exceptions in the page (a CSP violation shows up here). */
  let pageErrors: string[] = [];

  beforeAll(async () => {
    const database = await createTestDatabase('sqlite');
    ({ app } = await openTestForgesync(testConfig(database.url)));
    server = await buildServer(app, { tokens: { admin: ADMIN_TOKEN, read: undefined } });
    await server.listen({ port: 0, host: '127.0.0.1' });
    const address = server.server.address();
    if (!address || typeof address !== 'object') throw new Error('the server has no TCP address');
    baseUrl = `http://127.0.0.1:${address.port}`;
    app.startService();

    ({ browser, page, pageErrors } = await openBrowserPage());
    mkdirSync(OUTPUT_DIR, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await app?.close();
  });

  const textOf = (selector: string, expected: RegExp, timeoutMs?: number) => textOfPage(page, selector, expected, timeoutMs);

  it('serves the page with a strict content security policy', async () => {
    // The shell, its shared base, and each capability's page module (src/<capability>/dashboard/ as /dashboard/<capability>/).
    const scripts = ['app.js', 'pages.js', 'dom.js', 'api.js', 'format.js', 'actions.js', 'route.js', 'leases.js', 'replication/overview.js', 'replication/sources.js', 'importer/imports.js', 'feeds/feeds.js'];
    for (const path of ['/', '/dashboard', '/dashboard/style.css', ...scripts.map((script) => `/dashboard/${script}`)]) {
      const response = await fetch(`${baseUrl}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-security-policy'), path).toMatch(/default-src 'self'/);
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
    expect((await fetch(`${baseUrl}/`)).headers.get('content-type')).toMatch(/^text\/html/);
    for (const script of scripts) expect((await fetch(`${baseUrl}/dashboard/${script}`)).headers.get('content-type'), script).toMatch(/^text\/javascript/);
    // Only the dashboard's own files are served from disk.
    expect((await fetch(`${baseUrl}/dashboard/../package.json`)).status).toBe(404);
    expect((await fetch(`${baseUrl}/dashboard/app.ts`)).status).toBe(404);
    expect((await fetch(`${baseUrl}/dashboard/index.html`)).status).toBe(404);
    expect((await fetch(`${baseUrl}/dashboard/feeds/module.js`)).status).toBe(404);
  });

  it('signs in, adds a source, watches it sync, resyncs it and shows the leases', async () => {
    const upstream = Upstream.create();

    // The API answers 401: the page asks for a token.
    await page.goto(`${baseUrl}/`);
    await page.locator('#token-view').waitFor({ state: 'visible' });
    await page.fill('#token-input', ADMIN_TOKEN);
    await page.click('#token-form button[type=submit]');
    await page.locator('#overview-view').waitFor({ state: 'visible' });
    await textOf('#scheduler-state', /^(standby|active)$/);
    expect(await page.evaluate('sessionStorage.getItem("forgesync.token")')).toBe(ADMIN_TOKEN);
    expect(await page.context().cookies()).toEqual([]);

    // Add the source through the form.
    await page.click('nav a[data-nav=sources]');
    await page.locator('#sources-view').waitFor({ state: 'visible' });
    await page.click('#add-panel summary');
    await page.fill('#add-url', upstream.bare);
    await page.fill('#add-name', 'demo');
    await page.click('#add-form button[type=submit]');
    await textOf('#flash', /Added demo/);

    // The list refreshes itself until the first sync is done.
    await textOf('tr[data-source="demo"] td:nth-child(2) .badge', /^synced$/);
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard-sources.png`, fullPage: true });

    // A new upstream commit, then "Resync" on the row: the mirror catches up.
    const head = upstream.commit();
    await page.click('tr[data-source="demo"] button');
    await textOf('#flash', /Resync of demo requested/);
    const requested = (await app.replication.getSource('demo')).registry.requestedSeq;
    await page.click('tr[data-source="demo"] a');
    await page.locator('#source-view').waitFor({ state: 'visible' });
    await textOf('#source-facts', new RegExp(`up to date \\(#${requested}\\)`));
    await textOf('#source-state', /^synced$/);
    await textOf('#attempts-table tbody tr:first-child td:nth-child(2)', /^manual$/);
    await textOf('#attempts-table tbody tr:first-child td:nth-child(3)', /^synced$/);
    expect(Number(await page.locator('#attempts-table tbody tr:first-child td:nth-child(5)').textContent())).toBeGreaterThan(0);
    const source = await app.replication.getSource('demo');
    expect(source.registry.state).toBe('synced');
    expect(refsOf(source.registry.mirrorPath!)).toBe(refsOf(upstream.bare));
    expect(refsOf(source.registry.mirrorPath!)).toContain(head);
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard-source.png`, fullPage: true });

    // Bulk resync asks first, with the number of rows a dry run counted.
    await page.click('nav a[data-nav=overview]');
    await textOf('#state-bars [data-count=synced]', /^1$/);
    await page.click('#resync-all');
    await textOf('#confirm-text', /resync request for 1 source;/);
    await page.click('#confirm-ok');
    await textOf('#flash', /Resync requested for 1 source\./);
    await eventually('the bulk resync to be served', async () => {
      const row = (await app.replication.getSource('demo')).registry;
      return row.state === 'synced' && row.completedSeq === row.requestedSeq && row.requestedSeq > requested;
    });
    await textOf('#state-bars [data-count=synced]', /^1$/);
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard-overview.png`, fullPage: true });

    // Leases: the active scheduler's lease, holder as name(pid)@host, fence, time left.
    await page.click('nav a[data-nav=leases]');
    const row = 'tr[data-lease="scheduler:replication"]';
    const holderText = await textOf(`${row} td:nth-child(2)`, /\(\d+\)@/);
    expect(holderText).toContain(`(${process.pid})@`);
    const fence = Number(await textOf(`${row} td:nth-child(3)`, /^\d+$/));
    await textOf(`${row} td:nth-child(5)`, /\d+ s$/);
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard.png`, fullPage: true });

    // Force release (by fence) after a confirmation; the scheduler takes the lease again with a new fence.
    await page.click(`${row} button`);
    await textOf('#confirm-text', new RegExp(`fence ${fence}\\.`));
    await page.click('#confirm-ok');
    await textOf('#flash', /Released scheduler:replication\./);
    await eventually('the scheduler to hold its lease again', async () => {
      const text = await page.locator(`${row} td:nth-child(3)`).textContent({ timeout: 1_000 }).catch(() => null);
      return text !== null && Number(text) > fence;
    });

    expect(pageErrors).toEqual([]);
  }, 120_000);

  it('updates rows in place by name across refreshes: a focused row action keeps its focus and its row', async () => {
    const upstream = Upstream.create();
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      expect(response.ok, `${method} ${path}: ${response.status} ${await response.text()}`).toBe(true);
    };
    /** Refreshes now rather than at the next tick of the page's timer (the page refreshes when it becomes visible). */
    const refreshNow = () => page.evaluate(`document.dispatchEvent(new Event('visibilitychange'))`);
    const row = (name: string) => `tr[data-source="${name}"]`;

    await call('POST', '/api/sources', { name: 'keyed-m', url: upstream.bare });
    await page.goto(`${baseUrl}/`);
    await page.evaluate(`sessionStorage.setItem('forgesync.token', ${JSON.stringify(ADMIN_TOKEN)})`);
    await page.goto(`${baseUrl}/#/sources`);
    await page.reload(); // a page that asked for a token waits for its form
    await page.locator('#sources-view').waitFor({ state: 'visible' });
    // The search narrows the list to this test's sources.
    await page.fill('#search', 'keyed-');
    await eventually('the search to be applied', async () => (await page.locator('#sources-table tbody tr').count()) === 1 && (await page.locator(row('keyed-m')).count()) === 1);
    await textOf(`${row('keyed-m')} td:nth-child(2) .badge`, /^synced$/);
    // The user tabs to keyed-m's Resync button; the page keeps a reference to the row to compare with later.
    await page.evaluate(`(() => {
      const row = document.querySelector('tr[data-source="keyed-m"]');
      window.__keptRow = row;
      row.querySelector('button').focus();
    })()`);
    const focusKept = `document.activeElement === window.__keptRow.querySelector('button') && window.__keptRow.isConnected`;
    expect(await page.evaluate(focusKept)).toBe(true);

    // Rows arrive before and after it, one refresh each, and one leaves: each refresh changes the table.
    for (const name of ['keyed-a', 'keyed-z', 'keyed-b']) {
      await call('POST', '/api/sources', { name, url: upstream.bare });
      await refreshNow();
      await page.locator(row(name)).waitFor();
      expect(await page.evaluate(focusKept), `focus after ${name} arrived`).toBe(true);
    }
    await page.evaluate(`window.__firstRow = document.querySelector('tr[data-source="keyed-a"]')`);
    await textOf(`${row('keyed-a')} td:nth-child(2) .badge`, /^synced$/);
    await call('DELETE', '/api/sources/keyed-a');
    await refreshNow();
    await page.locator(row('keyed-a')).waitFor({ state: 'detached' });
    await textOf(`${row('keyed-b')} td:nth-child(2) .badge`, /^synced$/);
    await textOf(`${row('keyed-z')} td:nth-child(2) .badge`, /^synced$/);

    // The rows are in name order, the same elements as before (updated in place), and the focus never moved.
    const names = await page.locator('#sources-table tbody tr').evaluateAll((rows) => rows.map((each) => each.getAttribute('data-source')));
    expect(names).toEqual(['keyed-b', 'keyed-m', 'keyed-z']);
    expect(await page.evaluate(`document.querySelector('tr[data-source="keyed-m"]') === window.__keptRow`)).toBe(true);
    expect(await page.evaluate(focusKept)).toBe(true);
    expect(await page.inputValue('#search')).toBe('keyed-');

    // The focused button still acts on its row.
    await page.keyboard.press('Enter');
    await textOf('#flash', /Resync of keyed-m requested/);
    expect(pageErrors).toEqual([]);
  }, 120_000);
});
