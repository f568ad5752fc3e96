import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { eventually } from './eventually.js';

/** Debian's chromium: never a browser download. */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Launches Debian's headless chromium and opens one page (1280×860, 20 s
 * timeouts); a missing chromium fails with the command that installs it.
 * `pageErrors` collects the page's uncaught errors and its console errors
 * (`<text> (<url>)`), but for 401s (the dashboard asks before it has a
 * token) and those `expected` says a test provokes: a test ends by
 * expecting it empty.
 */
export async function openBrowserPage(expected: (text: string, url: string) => boolean = () => false): Promise<{ browser: Browser; page: Page; pageErrors: string[] }> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `the dashboard tests need Debian's chromium at ${CHROMIUM}, which is missing; install it with ` +
        '`apt-get update && apt-get install -y chromium` (npm test does this)',
    );
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const pageErrors: string[] = [];
  page.on('console', (message) => {
    const [text, url] = [message.text(), message.location().url];
    if (message.type() === 'error' && !/status of 401/.test(text) && !expected(text, url)) pageErrors.push(`${text} (${url})`);
  });
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  return { browser, page, pageErrors };
}

/** Polls `page` until the text of the first element `selector` finds matches `expected`; returns that text. */
export async function textOf(page: Page, selector: string, expected: RegExp, timeoutMs = 30_000): Promise<string> {
  return eventually(
    `${selector} to match ${expected}`,
    async () => {
      const text = (await page.locator(selector).first().textContent({ timeout: 1_000 }).catch(() => null)) ?? '';
      return expected.test(text) ? text : null;
    },
    timeoutMs,
  );
}

/** `text` with the characters special in a regular expression escaped. */
export const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A pattern matching exactly `value`'s text. */
export const exactly = (value: string | number) => new RegExp(`^${escapeRegExp(String(value))}$`);
