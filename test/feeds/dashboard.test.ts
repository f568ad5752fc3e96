import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FeedStatus } from '../../src/feeds/status.js';
import { feedLeaseKey } from '../../src/feeds/runner.js';
import { WebhookReceiver } from './sinks/http-receiver.js';
import { eventually } from '../support/harness.js';
import { Upstream } from '../support/upstream.js';
import { testSecret } from '../support/secrets.js';
import { escapeRegExp as escape, exactly, openBrowserPage, textOf as textOfPage } from '../support/browser.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { feedStore } from '../support/stores.js';

/*
 * The dashboard's Feeds pages in Debian's headless chromium, over a real
 * `forgesync serve` API on SQLite with three feeds of one source's changes:
 * `hooks` (an HTTP receiver on 127.0.0.1 that refuses the topic branch's
 * event once, so it is a dead letter; one attempt is the limit here),
 * `files` (a file sink that never ran, so its changes lag) and `gone` (its
 * receiver answered 410, so it is disabled). No worker runs until the last
 * step: what the buttons record is read back through the API, then the
 * workers serve it.
 */

const ADMIN_TOKEN = testSecret('ADMIN_TOKEN');
const READ_TOKEN = testSecret('READ_TOKEN');
/** A token-like query parameter of the sink URL: the API shows it as `***`. */
const SINK_QUERY_SECRET = testSecret('FEED_SINK_QUERY');
/** The signing secret of the feed secret `hooks_key`: the page shows the name only. */
const HOOKS_KEY = testSecret('FEED_HOOKS_KEY');
const OUTPUT_DIR = fileURLToPath(new URL('../../test-output/', import.meta.url));
/** The receiver's answer to the topic branch's event: markup that must reach the page as text. */
const HOSTILE = '<img src=x onerror="window.__feedXss=1"> refused';

describe('dashboard feeds page in headless chromium', () => {
  let t: TestServer;
  let receiver: WebhookReceiver;
  let upstream: Upstream;
  let fileDir: string;
  let browser: Browser;
  let page: Page;
  /** While true, the receiver answers 500 with HOSTILE to the events of refs/heads/topic. */
  let refuseTopic = true;
  /** Console errors and uncaught exceptions in the page (a CSP violation shows up here). */
  let pageErrors: string[] = [];

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    receiver.answer = (request) => {
      if (request.path.startsWith('/gone')) return { status: 410, body: 'endpoint removed' };
      if (refuseTopic && request.body.includes('"refs/heads/topic"')) return { status: 500, body: HOSTILE };
      return null;
    };
    // hooks signs with a feed secret the operator defined for the receiver's host.
    const secretsFile = join(mkdtempSync(join(tmpdir(), 'forgesync-secrets-')), 'secrets.json');
    writeFileSync(secretsFile, JSON.stringify({ 'feed:hooks_key': { secret: HOOKS_KEY, hosts: [`127.0.0.1:${receiver.port}`] } }));
    t = await startTestServer({
      listen: true,
      tokens: { admin: ADMIN_TOKEN, read: READ_TOKEN },
      env: { FORGESYNC_SECRETS_FILE: secretsFile, FORGESYNC_FEED_MAX_ATTEMPTS: '1', FORGESYNC_FEED_POLL_INTERVAL: '100ms', FORGESYNC_FEED_RETRY_BASE: '50ms', FORGESYNC_FEED_RETRY_MAX: '200ms' },
    });
    const { feeds } = t.app;

    upstream = Upstream.create();
    await t.app.replication.addSource({ name: 'alpha', url: upstream.bare });
    expect((await t.app.replication.sync('alpha')).served).toBe(true);

    // hooks: its first full sync hands the receiver main's state.
    await feeds.add({ name: 'hooks', sink: receiver.url(`/hooks?token=${SINK_QUERY_SECRET}`), sources: 'alpha', secret: 'hooks_key' });
    expect((await feeds.resync('hooks', { wait: true })).fullSync).toMatchObject({ requested: false, running: false });
    // gone: its receiver answers 410 to the full sync's first chunk.
    await feeds.add({ name: 'gone', sink: receiver.url('/gone') });
    expect((await feeds.resync('gone', { wait: true })).disabled).toMatch(/410/);
    // files: never runs before the last step.
    // Inside the feed file root: file sinks write nowhere else.
    mkdirSync(t.app.config.feedFileRoot, { recursive: true });
    fileDir = mkdtempSync(join(t.app.config.feedFileRoot, 'files-'));
    await feeds.add({ name: 'files', sink: pathToFileURL(fileDir).href });

    // Two changes: main moves (delivered) and topic appears (refused: a dead letter at once).
    upstream.commit('main');
    upstream.commit('topic');
    expect((await t.app.replication.sync('alpha')).served).toBe(true);
    await feeds.sync('hooks', { wait: true });

    ({ browser, page, pageErrors } = await openBrowserPage(
      (text, url) =>
        // The read-only token's Pause is refused: that 403 is expected.
        (/status of 403/.test(text) && url.endsWith('/api/feeds/hooks/pause')) ||
        // The page of an unknown feed asks for it (and its dead letters) once per refresh: those 404s are expected.
        (/status of 404/.test(text) && /\/api\/feeds\/nothing-here(\/dead-letters)?$/.test(url)),
    ));
    mkdirSync(OUTPUT_DIR, { recursive: true });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await receiver?.stop();
  });

  const status = (name: string) => t.getJson<FeedStatus>(`/api/feeds/${encodeURIComponent(name)}`);

  const textOf = (selector: string, expected: RegExp, timeoutMs?: number) => textOfPage(page, selector, expected, timeoutMs);

  const row = (name: string) => `tr[data-feed="${name}"]`;
  const field = (name: string, key: string) => `${row(name)} [data-field="${key}"]`;

  /** The row of `name` shows the numbers of its status. */
  async function expectRow(feed: FeedStatus): Promise<void> {
    const { name } = feed;
    await textOf(field(name, 'sink'), exactly(feed.sink));
    await textOf(field(name, 'lag'), exactly(feed.lag.changes));
    await textOf(field(name, 'acked'), exactly(feed.ackedSeq));
    await textOf(field(name, 'head'), exactly(feed.headSeq));
    await textOf(field(name, 'deadLetters'), exactly(feed.deadLetters));
    await textOf(field(name, 'retrying'), exactly(feed.retrying));
    await textOf(field(name, 'skips'), exactly(feed.skips));
    // The holder shows in the state cell, while there is one.
    if (feed.holder === null) expect(await page.locator(field(name, 'holder')).count(), `${name}'s holder`).toBe(0);
    else await textOf(field(name, 'holder'), exactly(feed.holder));
  }

  /** Reloads the page with `token` in its session storage (where the token form puts it), on the Feeds page. */
  async function useToken(token: string): Promise<void> {
    await page.evaluate(`sessionStorage.setItem('forgesync.token', ${JSON.stringify(token)})`);
    await page.reload();
    await page.click('nav a[data-nav=feeds]');
    await page.locator('#feeds-view').waitFor({ state: 'visible' });
  }

  it('lists the feeds with lag, acked and head numbers, last runs, holders, dead letters and full syncs, and shows the dead letters', async () => {
    const hooks = await status('hooks');
    expect(hooks).toMatchObject({ paused: false, disabled: null, holder: null, deadLetters: 1, retrying: 0, lag: { changes: 1 } });
    expect(hooks.lastRun).toMatchObject({ operation: 'partial sync', outcome: 'retrying', delivered: 1 });
    expect(hooks.ackedSeq).toBeLessThan(hooks.headSeq);
    expect(hooks.sink).toContain('token=***');
    expect(hooks.sink).not.toContain(SINK_QUERY_SECRET);
    const files = await status('files');
    expect(files).toMatchObject({ lastRun: null, deadLetters: 0, fullSync: { requested: true, running: false } });
    expect(files.lag.changes).toBeGreaterThanOrEqual(2);
    const gone = await status('gone');
    expect(gone.disabled).toMatch(/410 Gone/);

    await page.goto(`${t.url}/`);
    await page.locator('#token-view').waitFor({ state: 'visible' });
    await page.fill('#token-input', ADMIN_TOKEN);
    await page.click('#token-form button[type=submit]');
    await page.locator('#overview-view').waitFor({ state: 'visible' });
    await page.click('nav a[data-nav=feeds]');
    await page.locator('#feeds-view').waitFor({ state: 'visible' });
    expect(await page.locator('nav a[data-nav=feeds]').getAttribute('aria-current')).toBe('page');
    expect(await page.locator('#feeds-table tbody tr').count()).toBe(3);

    for (const feed of [hooks, files, gone]) await expectRow(feed);
    expect(await page.locator('#feeds-table').textContent()).not.toContain(SINK_QUERY_SECRET);

    // hooks: idle, its last run delivered main and left topic dead; its dead letter count links to its page.
    await textOf(field('hooks', 'state'), /^idle$/);
    await textOf(field('hooks', 'lastRun'), /^partial sync\s*retrying$/);
    await textOf(field('hooks', 'delivered'), /^1$/);
    await textOf(`${row('hooks')} a[href="#/feeds/hooks"] [data-field="deadLetters"]`, /^1$/);
    await textOf(field('hooks', 'fullSync'), /^—$/);
    await textOf(`${row('hooks')} button[data-action=pause]`, /^Pause$/);
    // files: never ran, its first full sync asked for.
    await textOf(field('files', 'lastRun'), /^never$/);
    await textOf(field('files', 'fullSync'), /^requested$/);
    await textOf(field('files', 'oldest'), /^\d+ s$/);
    // gone: disabled with the reason, and Resume offered instead of Pause.
    await textOf(field('gone', 'state'), /disabled/);
    await textOf(field('gone', 'disabled'), /^the sink answered 410 Gone \(HTTP 410/);
    expect(await page.locator(field('gone', 'disabled')).getAttribute('title')).toBe(gone.disabled);
    expect(await page.locator(`${row('gone')} button[data-action=resume]`).count()).toBe(1);
    expect(await page.locator(`${row('gone')} button[data-action=pause]`).count()).toBe(0);

    // While something holds files' lease, the page says who.
    await t.app.kernel.leases.tryWithLease(feedLeaseKey('files'), { ttlMs: 30_000, owner: 'full sync' }, async () => {
      const held = await status('files');
      expect(held.holder).toBe(`full sync(${process.pid})`);
      await textOf(field('files', 'holder'), exactly(held.holder!));
      await textOf(field('files', 'state'), new RegExp(`^running\\s*by ${escape(held.holder!)}$`));
      await page.screenshot({ path: `${OUTPUT_DIR}dashboard-feeds.png`, fullPage: true });
    });
    expect((await status('files')).holder).toBeNull();
    await textOf(field('files', 'state'), /^idle$/);
    expect(await page.locator(field('files', 'holder')).count()).toBe(0);

    // hooks' page: its dead letter (seq, type, subject, attempts, the receiver's answer as text), its last error.
    const [letter, ...others] = await t.getJson<{ seq: number; type: string; subject: string; attempts: number; lastError: string }[]>('/api/feeds/hooks/dead-letters');
    expect(others).toEqual([]);
    expect(letter).toMatchObject({ type: 'dev.forgesync.ref.created', subject: 'refs/heads/topic', attempts: 1 });
    expect(letter!.lastError).toContain(HOSTILE);
    await page.click(`${row('hooks')} a.strong`);
    await page.locator('#feed-view').waitFor({ state: 'visible' });
    await textOf('#feed-title', /^hooks$/);
    await textOf('#feed-state', /^idle$/);
    await textOf('#feed-dead-count', /^\(1\)$/);
    const cells = `#feed-dead-letters tbody tr[data-seq="${letter!.seq}"] td`;
    await textOf(`${cells}:nth-child(1)`, exactly(letter!.seq));
    await textOf(`${cells}:nth-child(2)`, /^dev\.forgesync\.ref\.created$/);
    await textOf(`${cells}:nth-child(3)`, /^refs\/heads\/topic$/);
    await textOf(`${cells}:nth-child(4)`, /^1$/);
    await textOf(`${cells}:nth-child(5)`, new RegExp(escape(HOSTILE)));
    await textOf('#feed-error', new RegExp(escape(HOSTILE)));
    expect(await page.locator('#feed-error-panel').isVisible()).toBe(true);
    // Markup from the receiver stays text: no element made of it, no handler run.
    expect(await page.locator('#feed-view img').count()).toBe(0);
    expect(await page.evaluate('window.__feedXss')).toBeUndefined();
    await textOf('#feed-progress [data-field="acked"]', exactly(hooks.ackedSeq));
    await textOf('#feed-progress [data-field="lag"]', /^1$/);
    await textOf('#feed-progress [data-field="holder"]', /^—$/);
    await textOf('#feed-facts [data-field="delivered"]', exactly(hooks.delivered));
    // The feed secret's name, never the secret.
    expect(hooks.secret).toBe('hooks_key');
    await textOf('#feed-facts', /Secret\s*hooks_key/);
    expect(await page.locator('#feed-facts').textContent()).not.toContain(HOOKS_KEY);
    await textOf('#feed-run', /partial sync/);
    expect(await page.locator('#feed-retry').isVisible()).toBe(true);
    expect(await page.locator('#feed-pause').isVisible()).toBe(true);
    expect(await page.locator('#feed-resume').isHidden()).toBe(true);
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard-feed.png`, fullPage: true });

    // An unknown name.
    await page.goto(`${t.url}/#/feeds/nothing-here`);
    await textOf('#feed-state', /^not found$/);
    await textOf('#feed-facts', /There is no feed with this name\./);
    expect(await page.locator('#feed-retry').isHidden()).toBe(true);

    expect(pageErrors).toEqual([]);
  }, 120_000);

  it('refuses a read-only token, then syncs, pauses, resumes, resyncs and retries dead letters; the workers serve it', async () => {
    // A read-only token: Pause is refused with the server's reason, nothing changes.
    await useToken(READ_TOKEN);
    await page.click(`${row('hooks')} button[data-action=pause]`);
    await textOf('#flash', /read-only.*\(forbidden\)/);
    expect((await status('hooks')).paused).toBe(false);

    await useToken(ADMIN_TOKEN);

    // Sync records a partial sync request (no worker runs yet to take it).
    expect((await feedStore(t.app).get('hooks')).partialRequested).toBe(false);
    await page.click(`${row('hooks')} button[data-action=sync]`);
    await textOf('#flash', /^Sync of hooks requested\.$/);
    expect((await feedStore(t.app).get('hooks')).partialRequested).toBe(true);

    // Pause, then Resume.
    await page.click(`${row('hooks')} button[data-action=pause]`);
    await textOf('#flash', /^Paused hooks\.$/);
    expect((await status('hooks')).paused).toBe(true);
    await textOf(field('hooks', 'state'), /^paused$/);
    await textOf(`${row('hooks')} button[data-action=resume]`, /^Resume$/);
    expect(await page.locator(`${row('hooks')} button[data-action=pause]`).count()).toBe(0);

    await page.click(`${row('hooks')} button[data-action=resume]`);
    await textOf('#flash', /^Resumed hooks\.$/);
    expect((await status('hooks')).paused).toBe(false);
    await textOf(field('hooks', 'state'), /^idle$/);
    await textOf(`${row('hooks')} button[data-action=pause]`, /^Pause$/);

    // Resume re-enables the disabled feed.
    await page.click(`${row('gone')} button[data-action=resume]`);
    await textOf('#flash', /^Resumed gone\.$/);
    expect(await status('gone')).toMatchObject({ paused: false, disabled: null });
    await textOf(field('gone', 'state'), /^idle$/);

    // Resync records a full sync.
    expect((await status('hooks')).fullSync.requested).toBe(false);
    await page.click(`${row('hooks')} button[data-action=resync]`);
    await textOf('#flash', /^Full sync of hooks requested\.$/);
    expect((await status('hooks')).fullSync).toMatchObject({ requested: true, running: false });
    await textOf(field('hooks', 'fullSync'), /^requested$/);

    // Retry dead letters, from hooks' page.
    await page.click(`${row('hooks')} a.strong`);
    await page.locator('#feed-view').waitFor({ state: 'visible' });
    await textOf('#feed-dead-count', /^\(1\)$/);
    await page.click('#feed-retry');
    await textOf('#flash', /^Sending 1 dead letter of hooks again\.$/);
    expect(await t.getJson('/api/feeds/hooks/dead-letters')).toEqual([]);
    const retried = await status('hooks');
    expect(retried).toMatchObject({ deadLetters: 0, lag: { changes: 1 } });
    await textOf('#feed-dead-letters tbody', /^No dead letters\.$/);
    await eventually('Retry to be hidden', async () => page.locator('#feed-retry').isHidden());
    await textOf('#feed-progress [data-field="deadLetters"]', /^0$/);

    // The workers start: the full sync runs (main's state reaches the receiver again), the retried topic event goes through.
    refuseTopic = false;
    const seen = receiver.accepted.length;
    await t.app.startService();
    const served = await eventually(
      'hooks to run its full sync and catch up',
      async () => {
        const now = await status('hooks');
        return !now.fullSync.requested && !now.fullSync.running && now.lag.changes === 0 && now.holder === null ? now : null;
      },
      30_000,
    );
    expect(served).toMatchObject({ deadLetters: 0, retrying: 0, ackedSeq: served.headSeq });
    const after = receiver.accepted.slice(seen).map((entry) => entry.event);
    expect(after.some((event) => event.subject === 'refs/heads/main')).toBe(true);
    expect(after.some((event) => event.type === 'dev.forgesync.ref.created' && event.subject === 'refs/heads/topic')).toBe(true);
    await textOf('#feed-progress [data-field="lag"]', /^0$/);
    await textOf('#feed-progress [data-field="acked"]', exactly(served.headSeq));
    await textOf('#feed-progress [data-field="fullSync"]', /^—$/);
    await textOf('#feed-run', new RegExp(escape(served.lastRun!.operation)));

    // files ran too: its full sync and its changes, written to its directory.
    await page.click('nav a[data-nav=feeds]');
    await page.locator('#feeds-view').waitFor({ state: 'visible' });
    const written = await eventually('files to catch up', async () => {
      const now = await status('files');
      return !now.fullSync.requested && !now.fullSync.running && now.lag.changes === 0 ? now : null;
    });
    expect(readdirSync(fileDir).length).toBeGreaterThan(0);
    await textOf(field('files', 'lag'), /^0$/);
    await textOf(field('files', 'acked'), exactly(written.ackedSeq));
    await textOf(field('hooks', 'lag'), /^0$/);
    await textOf(field('hooks', 'deadLetters'), /^0$/);
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard-feeds-served.png`, fullPage: true });

    expect(pageErrors).toEqual([]);
  }, 120_000);
});
