import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';

/** `src/` (or `dist/` once built): each capability's folder may hold a `dashboard/` folder of page modules. */
const SOURCE_ROOT = new URL('../../', import.meta.url);
/** The shell, its shared base and its stylesheet: `src/server/dashboard`, served as `/dashboard/<file>`. */
const SHELL_FOLDER = 'server';

/** The types of the files a dashboard folder may hold; nothing else in it is served. */
const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

interface Asset {
  type: string;
  body: Buffer;
}

/**
 * Every dashboard file by the path it is served at, read once at start (so a
 * request never names a file on disk): `src/server/dashboard/<file>` as
 * `/dashboard/<file>`, and each capability's `src/<capability>/dashboard/<file>`
 * (its page modules) as `/dashboard/<capability>/<file>`.
 */
function readAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const folders = readdirSync(SOURCE_ROOT, { withFileTypes: true }).filter((entry) => entry.isDirectory());
  for (const { name } of folders) {
    const folder = new URL(`${name}/dashboard/`, SOURCE_ROOT);
    if (!existsSync(folder)) continue;
    const prefix = name === SHELL_FOLDER ? '/dashboard/' : `/dashboard/${name}/`;
    for (const file of readdirSync(folder, { withFileTypes: true })) {
      const type = TYPES[extname(file.name)];
      if (!file.isFile() || !type) continue;
      assets.set(prefix + file.name, { type, body: readFileSync(fileURLToPath(new URL(file.name, folder))) });
    }
  }
  return assets;
}

/**
 * Browser libraries the pages use, served from the installed packages as
 * `/dashboard/vendor/<file>` (never copied into src/, never from a CDN):
 * uPlot draws the Activity page's charts.
 */
const VENDOR_FILES: Readonly<Record<string, string>> = {
  '/dashboard/vendor/uPlot.esm.js': 'uplot/dist/uPlot.esm.js',
  '/dashboard/vendor/uPlot.min.css': 'uplot/dist/uPlot.min.css',
};

function readVendorFiles(assets: Map<string, Asset>): void {
  const require = createRequire(import.meta.url);
  for (const [path, file] of Object.entries(VENDOR_FILES)) assets.set(path, { type: TYPES[extname(file)]!, body: readFileSync(require.resolve(file)) });
}

/** The shell's own page (the leases), after the modules' pages. */
const SHELL_PAGES = ['/dashboard/leases.js'];

/**
 * `/dashboard/pages.js`, which the shell (app.js) loads: the page modules
 * in the order of the navigation, the first being the home page. Every one
 * must be among the assets: a page missing from `dist/` (or misspelt in a
 * module's definition) fails the server at boot rather than the dashboard
 * in a browser.
 */
function pageList(assets: Map<string, Asset>, modulePages: readonly string[]): Asset {
  const pages = [...modulePages, ...SHELL_PAGES];
  for (const path of pages) {
    if (!assets.has(path)) {
      throw new Error(`the dashboard page ${path} is not among the dashboard files of ${fileURLToPath(SOURCE_ROOT)} (src/<capability>/dashboard/; run npm run build)`);
    }
  }
  const body = `// The dashboard's pages, in the order of the navigation (from the modules' definitions).\nexport const PAGE_MODULES = ${JSON.stringify(pages)};\n`;
  return { type: TYPES['.js']!, body: Buffer.from(body) };
}

/**
 * Scripts, styles and API calls come from this origin only: no inline script or
 * style, no framing, no plugins. The dashboard touches the DOM with
 * `textContent`/`createElement` only and styles bars through the CSSOM, which
 * CSP allows.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The web dashboard: one static page (`/`, `/dashboard`), its shell, shared
 * scripts and stylesheet under `/dashboard/`, and each capability's page modules
 * under `/dashboard/<capability>/`. The page itself is public; all data comes
 * from the JSON API with the bearer token the user enters (kept in session
 * storage, sent as a header: no cookie, so nothing for CSRF to ride on).
 */
export function dashboardRoutes(modulePages: readonly string[]): FastifyPluginAsyncZod {
  return async (server) => {
    // Read once at start: a missing file fails the server at boot, not a user later.
    const assets = readAssets();
    readVendorFiles(assets);
    assets.set('/dashboard/pages.js', pageList(assets, modulePages));
    const page = assets.get('/dashboard/index.html');
    if (!page) throw new Error(`the dashboard's index.html is missing from ${fileURLToPath(new URL(`${SHELL_FOLDER}/dashboard/`, SOURCE_ROOT))}; run npm run build`);

    const send = (reply: FastifyReply, asset: Asset) =>
      reply
        .header('content-security-policy', DASHBOARD_CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('x-frame-options', 'DENY')
        .header('cache-control', 'no-cache')
        .type(asset.type)
        .send(asset.body);

    const hidden = { schema: { hide: true } };
    for (const path of ['/', '/dashboard', '/dashboard/']) server.get(path, hidden, async (_request, reply) => send(reply, page));
    for (const [path, asset] of assets) {
      if (asset !== page) server.get(path, hidden, async (_request, reply) => send(reply, asset));
    }
  };
}
