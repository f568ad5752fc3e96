import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

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
 */
export async function openBrowserPage(): Promise<{ browser: Browser; page: Page }> {
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
  return { browser, page };
}
