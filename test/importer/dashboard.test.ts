import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImportStatusJson } from '../../src/importer/status.js';
import { buildServer, type ForgesyncServer } from '../../src/server/app.js';
import { credentialNames, startImportHarness, type ImportHarness } from './harness.js';
import { eventually } from '../support/harness.js';
import { testSecret } from '../support/secrets.js';
import { escapeRegExp as escape, openBrowserPage, textOf as textOfPage } from '../support/browser.js';

/*
 * The dashboard's Imports page in Debian's headless chromium, over a real
 * `forgesync serve` API with two imports against the fake GitHub: one run to
 * the end (with a deleted user and one attachment answering 404), one of a
 * project the fake does not have. No worker runs here: what the buttons
 * record is read back through the API.
 */

const ADMIN_TOKEN = testSecret('ADMIN_TOKEN');
const OUTPUT_DIR = fileURLToPath(new URL('../../test-output/', import.meta.url));
const UNKNOWN = 'nothing-here';

describe('dashboard imports page in headless chromium', () => {
  let h: ImportHarness;
  let server: ForgesyncServer;
  let browser: Browser;
  let page: Page;
  let baseUrl: string;
  let name: string;
  /** Console errors and uncaught exceptions in the page (a CSP violation shows up here). */
  let pageErrors: string[] = [];

  beforeAll(async () => {
    h = await startImportHarness();
    // One attachment download answers 404: a failure whose id is its URL.
    h.fake.inject({ match: (request) => request.pathKind === 'attachment', times: 1, fault: { status: 404 } });
    name = (await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) })).name;
    expect((await h.app.importer.runHere(name)).outcome).toBe('synced');
    await h.app.importer.create({ project: 'acme-org/nope', name: 'nope', apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
    const failed = await h.app.importer.runHere('nope');
    expect(failed.record.state).toBe('failed');
    expect(failed.record.failure).toMatch(/was not found/);

    server = await buildServer(h.app, { tokens: { admin: ADMIN_TOKEN, read: undefined } });
    await server.listen({ port: 0, host: '127.0.0.1' });
    const address = server.server.address();
    if (!address || typeof address !== 'object') throw new Error('the server has no TCP address');
    baseUrl = `http://127.0.0.1:${address.port}`;

    // The page of an unknown import asks for it once per refresh: that 404 is expected.
    ({ browser, page, pageErrors } = await openBrowserPage((text, url) => /status of 404/.test(text) && url.endsWith(`/api/imports/${UNKNOWN}`)));
    mkdirSync(OUTPUT_DIR, { recursive: true });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await h?.close();
  });

  async function status(importName: string): Promise<ImportStatusJson> {
    const response = await fetch(`${baseUrl}/api/imports/${encodeURIComponent(importName)}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(response.status).toBe(200);
    return (await response.json()) as ImportStatusJson;
  }

  const textOf = (selector: string, expected: RegExp, timeoutMs?: number) => textOfPage(page, selector, expected, timeoutMs);


  it('lists the imports and shows one in detail: stage, counts, requests, rate budget, sources, failures', async () => {
    const synced = await status(name);
    expect(synced).toMatchObject({ state: 'synced', stage: 'finish', failure: null });
    expect(synced.rate.length).toBe(1);

    await page.goto(`${baseUrl}/`);
    await page.locator('#token-view').waitFor({ state: 'visible' });
    await page.fill('#token-input', ADMIN_TOKEN);
    await page.click('#token-form button[type=submit]');
    await page.locator('#overview-view').waitFor({ state: 'visible' });

    // The list: both imports with their states.
    await page.click('nav a[data-nav=imports]');
    await page.locator('#imports-view').waitFor({ state: 'visible' });
    expect(await page.locator('nav a[data-nav=imports]').getAttribute('aria-current')).toBe('page');
    await textOf(`tr[data-import="${name}"] td:nth-child(2) .badge`, /^synced$/);
    await textOf('tr[data-import="nope"] td:nth-child(2) .badge', /^failed$/);
    await textOf(`tr[data-import="${name}"] td:nth-child(1)`, new RegExp(escape(h.project)));
    await textOf(`tr[data-import="${name}"] td:nth-child(3)`, /^finish \(11 of 11\)/);
    await textOf('tr[data-import="nope"] td:nth-child(3)', /^repository \(1 of 11\)/);
    await textOf('tr[data-import="nope"] td:nth-child(7)', /was not found/);
    expect(await page.locator('#imports-table tbody tr').count()).toBe(2);
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard-imports.png`, fullPage: true });

    // The detail of the synced one.
    await page.click(`tr[data-import="${name}"] a`);
    await page.locator('#import-view').waitFor({ state: 'visible' });
    await textOf('#import-title', new RegExp(`^${escape(name)}$`));
    await textOf('#import-state', /^synced$/);
    await textOf('#import-stage', /^finish \(11 of 11\)$/);
    await textOf('#import-facts', new RegExp(escape(h.project)));
    await textOf('#import-facts', new RegExp(escape(h.fake.apiUrl)));
    await textOf('#import-facts', /Duration/);
    for (const type of ['issue', 'note', 'pull_request', 'user', 'attachment']) {
      const fetched = synced.counts.fetched[type as keyof typeof synced.counts.fetched];
      const imported = synced.counts.imported[type as keyof typeof synced.counts.imported];
      expect(fetched, type).toBeGreaterThan(0);
      await textOf(`#import-counts [data-type="${type}"] .bar-value`, new RegExp(`^${imported} / ${fetched}$`));
    }
    // The deleted user and the 404 attachment were fetched but not imported.
    expect(synced.counts.imported.user).toBe(synced.counts.fetched.user - 1);
    expect(synced.counts.imported.attachment).toBe(synced.counts.fetched.attachment - 1);
    for (const [key, value] of Object.entries(synced.requests)) await textOf(`#import-requests [data-request="${key}"]`, new RegExp(`^${value}$`));
    await textOf('#import-requests [data-request="refreshesWaiting"]', new RegExp(`^${synced.refreshes.waiting}$`));
    expect(synced.requests.total).toBeGreaterThan(0);

    const [budget] = synced.rate;
    const rateRow = `#import-rate [data-credential="${budget!.credential}"]`;
    await textOf(`${rateRow} .bar-value`, new RegExp(`^${budget!.remaining} / ${budget!.limit}$`));
    await textOf(`${rateRow} .bar-note`, /^resets in \d+ (s|min)$/);

    const repository = synced.sources.repository!;
    const wiki = synced.sources.wiki!;
    expect(repository.state).toBe('synced');
    expect(await page.locator(`#import-sources a[href="#/sources/${encodeURIComponent(repository.name)}"]`).textContent()).toBe(repository.name);
    expect(await page.locator(`#import-sources a[href="#/sources/${encodeURIComponent(wiki.name)}"]`).textContent()).toBe(wiki.name);
    await textOf('#import-sources', new RegExp(`${escape(repository.name)}\\s*${repository.state}`));

    // Failures: the deleted user as text, the attachment as a link to its URL.
    expect(synced.failures.length).toBe(2);
    await textOf('#import-failures-count', /^\(2\)$/);
    await textOf('#import-failures tbody tr[data-failure-type="user"]', /^userghost.*404/);
    const attachment = synced.failures.find((failure) => failure.type === 'attachment')!;
    expect(attachment.id).toMatch(/^https?:\/\//);
    const link = page.locator('#import-failures tbody tr[data-failure-type="attachment"] a');
    expect(await link.getAttribute('href')).toBe(attachment.id);
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await page.locator('#import-failures tbody tr[data-failure-type="user"] a').count()).toBe(0);
    expect(await page.locator('#import-failure-panel').isHidden()).toBe(true);
    expect(await page.locator('#import-sync').isVisible()).toBe(true);
    expect(await page.locator('#import-resume').isHidden()).toBe(true);
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard-import.png`, fullPage: true });

    // A source link leads to the source's page.
    await page.click(`#import-sources a[href="#/sources/${encodeURIComponent(repository.name)}"]`);
    await page.locator('#source-view').waitFor({ state: 'visible' });
    await textOf('#source-title', new RegExp(`^${escape(repository.name)}$`));
    await textOf('#source-state', /^synced$/);

    // The failed one: its reason, nothing fetched, Resume offered and Sync not.
    await page.goto(`${baseUrl}/#/imports/nope`);
    await page.locator('#import-view').waitFor({ state: 'visible' });
    await textOf('#import-title', /^nope$/);
    await textOf('#import-state', /^failed$/);
    await textOf('#import-failure', /acme-org\/nope was not found/);
    expect(await page.locator('#import-failure-panel').isVisible()).toBe(true);
    await textOf('#import-counts', /^Nothing fetched yet\.$/);
    expect(await page.locator('#import-counts [data-type]').count()).toBe(0);
    expect(await page.locator('#import-resume').isVisible()).toBe(true);
    expect(await page.locator('#import-sync').isHidden()).toBe(true);
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard-import-failed.png`, fullPage: true });

    // An unknown name.
    await page.goto(`${baseUrl}/#/imports/${UNKNOWN}`);
    await textOf('#import-state', /^not found$/);
    await textOf('#import-facts', /There is no import with this name\./);

    expect(pageErrors).toEqual([]);
  }, 120_000);

  it('syncs, cancels (after a confirmation) and resumes an import from its page', async () => {
    await page.goto(`${baseUrl}/#/imports/${encodeURIComponent(name)}`);
    await page.locator('#import-view').waitFor({ state: 'visible' });
    await textOf('#import-state', /^synced$/);

    // Sync records a new run.
    await page.click('#import-sync');
    await textOf('#flash', new RegExp(`Sync of ${escape(name)} requested\\.`));
    const syncing = await status(name);
    expect(['pending', 'started', 'synced']).toContain(syncing.state);
    expect(syncing.run).toBe(2);
    expect(syncing.mode).toBe('sync');
    await textOf('#import-facts', /sync · run 2/);

    // Cancel asks first; dismissing the dialog changes nothing.
    await page.click('#import-cancel');
    await textOf('#confirm-text', new RegExp(`${escape(name)} \\(${escape(h.project)}\\) stops at its next write`));
    await page.click('#confirm button[value=cancel]');
    await page.locator('#confirm').waitFor({ state: 'hidden' });
    expect((await status(name)).state).not.toBe('cancelled');

    await page.click('#import-cancel');
    await textOf('#confirm-title', /^Cancel this import\?$/);
    await page.click('#confirm-ok');
    await textOf('#flash', new RegExp(`Cancelled ${escape(name)}\\.`));
    expect((await status(name)).state).toBe('cancelled');
    await textOf('#import-state', /^cancelled$/);
    await eventually('Resume to be offered and Cancel not', async () => (await page.locator('#import-resume').isVisible()) && (await page.locator('#import-cancel').isHidden()));
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard-import-cancelled.png`, fullPage: true });

    // Resume makes it pending again, in the same run.
    await page.click('#import-resume');
    await textOf('#flash', new RegExp(`Resume of ${escape(name)} requested\\.`));
    const resumed = await status(name);
    expect(['pending', 'started', 'synced']).toContain(resumed.state);
    expect(resumed.run).toBe(2);
    await textOf('#import-state', /^(pending|started|synced)$/);

    // Back in the list, the states follow.
    await page.click('nav a[data-nav=imports]');
    await textOf(`tr[data-import="${name}"] td:nth-child(2) .badge`, /^(pending|started|synced)$/);
    await textOf('tr[data-import="nope"] td:nth-child(2) .badge', /^failed$/);

    expect(pageErrors).toEqual([]);
  }, 120_000);
});
