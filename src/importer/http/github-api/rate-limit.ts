import type { ApiServer } from './context.js';
import { routeOptions } from './context.js';
import { sendJson } from './respond.js';

/*
 * GitHub's rate-limit headers on every answer, and `GET /rate_limit`, both
 * describing a generous synthetic budget. The copy does not count readers'
 * requests (failed authentications are throttled, see server/auth.ts), but
 * clients pace themselves by these headers (Octokit's throttling, gh) or ask
 * for them (PyGithub's `get_rate_limit`), and some stop without them.
 */

/** Requests per hour the headers announce: far above GitHub's 5,000, and never used up. */
const LIMIT = 1_000_000;

/** One resource's budget as GitHub describes it: always whole, renewed at the top of the next hour. */
function budget(now: number) {
  return { limit: LIMIT, used: 0, remaining: LIMIT, reset: Math.ceil(now / 3_600_000) * 3600 };
}

/** The `x-ratelimit-*` headers of an answer (the `core` resource). */
export function rateLimitHeaders(now = Date.now()): Record<string, string> {
  const { limit, used, remaining, reset } = budget(now);
  return {
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(reset),
    'x-ratelimit-used': String(used),
    'x-ratelimit-resource': 'core',
  };
}

/** `GET /rate_limit`: every resource GitHub lists, each with the synthetic budget (`rate` is `core`'s, as GitHub keeps it). */
export function rateLimitRoutes(server: ApiServer): void {
  server.get('/rate_limit', routeOptions('RateLimit', 'Get rate limit status for the authenticated user', {}), async (request, reply) => {
    const now = Date.now();
    const names = ['core', 'search', 'graphql', 'integration_manifest', 'source_import', 'code_scanning_upload', 'actions_runner_registration', 'scim', 'dependency_snapshots', 'code_search'];
    const resources = Object.fromEntries(names.map((name) => [name, budget(now)]));
    return sendJson(request, reply, { resources, rate: budget(now) });
  });
}
