import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { createTestDatabase, eventually, openTestForgesync, refsOf, testConfig } from '../replication/harness.js';
import { Upstream } from '../support/upstream.js';
import { testSecret } from '../support/secrets.js';
import { openBrowserPage } from './browser.js';

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
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const database = await createTestDatabase('sqlite');
    ({ app } = await openTestForgesync(testConfig(database.url)));
    server = await buildServer(app, { tokens: { admin: ADMIN_TOKEN, read: undefined } });
    await server.listen({ port: 0, host: '127.0.0.1' });
    const address = server.server.address();
    if (!address || typeof address !== 'object') throw new Error('the server has no TCP address');
    baseUrl = `http://127.0.0.1:${address.port}`;
    app.startService();

    ({ browser, page } = await openBrowserPage());
    page.on('console', (message) => {
      if (message.type() === 'error' && !/status of 401/.test(message.text())) pageErrors.push(message.text());
    });
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    mkdirSync(OUTPUT_DIR, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await app?.close();
  });

  /** Polls the page until `locator`'s text matches. */
  async function textOf(selector: string, expected: RegExp, timeoutMs = 30_000): Promise<string> {
    return eventually(
      `${selector} to match ${expected}`,
      async () => {
        const text = (await page.locator(selector).first().textContent({ timeout: 1_000 }).catch(() => null)) ?? '';
        return expected.test(text) ? text : null;
      },
      timeoutMs,
    );
  }

  it('serves the page with a strict content security policy', async () => {
    for (const path of ['/', '/dashboard', '/dashboard/app.js', '/dashboard/feeds.js', '/dashboard/style.css']) {
      const response = await fetch(`${baseUrl}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-security-policy'), path).toMatch(/default-src 'self'/);
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
    expect((await fetch(`${baseUrl}/`)).headers.get('content-type')).toMatch(/^text\/html/);
    expect((await fetch(`${baseUrl}/dashboard/app.js`)).headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await fetch(`${baseUrl}/dashboard/feeds.js`)).headers.get('content-type')).toMatch(/^text\/javascript/);
    // Only the dashboard's own files are served from disk.
    expect((await fetch(`${baseUrl}/dashboard/../package.json`)).status).toBe(404);
    expect((await fetch(`${baseUrl}/dashboard/app.ts`)).status).toBe(404);
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
    const requested = (await app.getSource('demo')).registry.requestedSeq;
    await page.click('tr[data-source="demo"] a');
    await page.locator('#source-view').waitFor({ state: 'visible' });
    await textOf('#source-facts', new RegExp(`up to date \\(#${requested}\\)`));
    await textOf('#source-state', /^synced$/);
    await textOf('#attempts-table tbody tr:first-child td:nth-child(2)', /^manual$/);
    await textOf('#attempts-table tbody tr:first-child td:nth-child(3)', /^synced$/);
    expect(Number(await page.locator('#attempts-table tbody tr:first-child td:nth-child(5)').textContent())).toBeGreaterThan(0);
    const source = await app.getSource('demo');
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
      const row = (await app.getSource('demo')).registry;
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
});
