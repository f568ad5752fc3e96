import { expect } from 'vitest';
import type { Forgesync } from '../../src/app/forgesync.js';
import { buildServer, type ForgesyncServer, type ServerOptions } from '../../src/server/app.js';
import type { AuthTokens } from '../../src/server/auth.js';
import { createTestDatabase, openTestForgesync, testConfig, type CapturedLogs } from './harness.js';
import { testSecret } from './secrets.js';

/** A forgesync HTTP server over a fresh SQLite registry, for tests. */
export interface TestServer {
  app: Forgesync;
  server: ForgesyncServer;
  logs: CapturedLogs;
  tokens: AuthTokens;
  /** `http://127.0.0.1:<port>` when started with `listen: true`, else undefined. */
  url: string | undefined;
  /**
   * Headers of an API request with `token` (default: the admin token; null: none):
   * `Authorization: Bearer <token>`, and `Content-Type: application/json`, which
   * state changes need.
   */
  auth(token?: string | null): Record<string, string>;
  /** GETs `path` with the admin token, expects 200, and returns its JSON body. */
  getJson<T>(path: string): Promise<T>;
  /** Closes the server, then the Forgesync (scheduler, workers, database, leases). */
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** Bearer tokens; the admin token defaults to a random one (the API never runs open). */
  tokens?: Partial<AuthTokens>;
  /** Extra FORGESYNC_* settings for testConfig. */
  env?: Record<string, string>;
  /** Also listen on 127.0.0.1 on a random port (for real HTTP clients and browsers). */
  listen?: boolean;
  /** Run the scheduler and workers (`app.startService()`), as `forgesync serve` does. */
  service?: boolean;
  bodyLimit?: ServerOptions['bodyLimit'];
  /** Reverse proxies whose X-Forwarded-* headers are believed (FORGESYNC_TRUST_PROXY). */
  trustProxy?: ServerOptions['trustProxy'];
}

/**
 * Opens a Forgesync on a temp SQLite database (local-path upstreams
 * allowed, short leases) and builds the HTTP server over it. Use
 * `server.inject(...)` for requests, or `listen: true` and `url`.
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const database = await createTestDatabase('sqlite');
  const { app, logs } = await openTestForgesync(testConfig(database.url, options.env));
  const tokens: AuthTokens = { admin: options.tokens?.admin ?? testSecret('SERVER_ADMIN_TOKEN'), read: options.tokens?.read };
  let server: ForgesyncServer;
  try {
    server = await buildServer(app, {
      tokens,
      ...(options.bodyLimit !== undefined ? { bodyLimit: options.bodyLimit } : {}),
      ...(options.trustProxy !== undefined ? { trustProxy: options.trustProxy } : {}),
    });
  } catch (error) {
    await app.close();
    throw error;
  }
  let url: string | undefined;
  if (options.listen) {
    await server.listen({ port: 0, host: '127.0.0.1' });
    const address = server.server.address();
    if (address && typeof address === 'object') url = `http://127.0.0.1:${address.port}`;
  } else {
    await server.ready();
  }
  if (options.service) app.startService();
  const auth = (token: string | null | undefined = tokens.admin): Record<string, string> => ({
    'content-type': 'application/json',
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  });
  return {
    app,
    server,
    logs,
    tokens,
    url,
    auth,
    getJson: async <T>(path: string): Promise<T> => {
      const response = await server.inject({ method: 'GET', url: path, headers: auth() });
      expect(response.statusCode, path).toBe(200);
      return response.json() as T;
    },
    close: async () => {
      await server.close();
      await app.close();
    },
  };
}
