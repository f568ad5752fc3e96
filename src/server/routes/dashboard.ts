import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';

/** Where the dashboard's static files live: `src/server/dashboard` (or `dist/…` once built). */
const ASSET_DIR = new URL('../dashboard/', import.meta.url);

/** The dashboard's files and their types; nothing else is ever read from disk. */
const ASSETS = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'feeds.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
} as const;

type AssetName = keyof typeof ASSETS;

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
 * The web dashboard: one static page (`/`, `/dashboard`) and its scripts and
 * stylesheet under `/dashboard/`. The page itself is public; all data comes
 * from the JSON API with the bearer token the user enters (kept in session
 * storage, sent as a header: no cookie, so nothing for CSRF to ride on).
 */
export function dashboardRoutes(): FastifyPluginAsyncZod {
  return async (server) => {
    // Read once at start: a missing file fails the server at boot, not a user later.
    const files = new Map<AssetName, Buffer>();
    for (const name of Object.keys(ASSETS) as AssetName[]) {
      files.set(name, readFileSync(fileURLToPath(new URL(name, ASSET_DIR))));
    }

    const send = (reply: FastifyReply, name: AssetName) =>
      reply
        .header('content-security-policy', DASHBOARD_CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('x-frame-options', 'DENY')
        .header('cache-control', 'no-cache')
        .type(ASSETS[name])
        .send(files.get(name));

    const page = { schema: { hide: true } };
    server.get('/', page, async (_request, reply) => send(reply, 'index.html'));
    server.get('/dashboard', page, async (_request, reply) => send(reply, 'index.html'));
    server.get('/dashboard/', page, async (_request, reply) => send(reply, 'index.html'));
    for (const name of Object.keys(ASSETS) as AssetName[]) {
      if (name !== 'index.html') server.get(`/dashboard/${name}`, page, async (_request, reply) => send(reply, name));
    }
  };
}
