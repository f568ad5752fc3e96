import type { FastifyReply, FastifyRequest } from 'fastify';
import { serializerCompiler, validatorCompiler, type FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { authenticate, type AuthTokens } from '../../../server/auth.js';
import { attachmentRoutes } from './attachment-routes.js';
import { githubErrorHandler, sendError } from './errors.js';
import { issueRoutes } from './issue-routes.js';
import type { ApiDatabase } from '../../store/read-api.js';
import { pullRoutes } from './pull-routes.js';
import { objectRoutes } from './object-routes.js';
import { timelineRoutes } from './timeline-routes.js';
import { rateLimitHeaders, rateLimitRoutes } from './rate-limit.js';
import { repoRoutes } from './repo-routes.js';
import { graphqlRoutes } from './graphql/route.js';
import { answerBranch, gitDataRoutes, MirrorLocator, type GitDataSource } from './git-data/index.js';
import { AttachmentLinks } from './rewrite.js';

export { attachmentPath, AttachmentRewriter } from './rewrite.js';

export interface GithubApiOptions {
  /** The registry database the importer stores into. */
  database: ApiDatabase;
  /** A read or an admin token reads; failed attempts are counted in `tokens.failures`. */
  tokens: AuthTokens;
  /** `<dataDir>/import-files`: downloaded attachments, each named by its SHA-256. */
  filesDir: string;
  /** FORGESYNC_PUBLIC_URL: every link answered points below `<publicUrl>/github` (absent: below the request's origin). */
  publicUrl?: string | undefined;
  /** The import mirrors the git-data routes read (branches, commits, contents…); absent: those paths are not served. */
  gitData?: GitDataSource | undefined;
}

/**
 * An onRequest hook: a read or admin token (`Authorization: token …` as
 * Octokit sends it, or `Bearer …`), else GitHub's 401 (`Requires
 * authentication` without one, `Bad credentials` with a wrong one). Failed
 * attempts count toward the server's throttle (per address and per token),
 * as for the rest of the API: past it, a failing attempt gets 429 until the
 * window is over; a valid token never does.
 */
function requireToken(tokens: AuthTokens) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const outcome = await authenticate(request, tokens);
    if ('access' in outcome) return;
    if (outcome.refused === 'throttled') {
      const wait = outcome.retryAfterS;
      return sendError(reply.header('retry-after', String(wait)), 429, `Too many failed authentication attempts from this address or with this token; try again in ${wait} s`);
    }
    return sendError(reply, 401, request.headers.authorization?.trim() ? 'Bad credentials' : 'Requires authentication');
  };
}

/**
 * The GitHub-compatible, read-only API over imported projects (registered
 * with prefix `/github`): `new Octokit({ baseUrl: '<origin>/github', auth:
 * <read token> })` reads an imported copy as it would read GitHub — the
 * JSON as GitHub gave it, GitHub's pagination (`per_page`, `page`, absolute
 * `Link` URLs), filters, sorting, errors and headers — with every API link
 * (`url`, `*_url`, `Link`) pointed at this server's `/github` (below
 * FORGESYNC_PUBLIC_URL when set) so that clients following them stay on the
 * copy, `html_url` left at the forge's web UI, and downloaded attachments
 * linked to `/github/attachments/…` on this server.
 *
 * Requests are validated against the routes' zod schemas (which also
 * document them in the OpenAPI document, tag `github`), but every error
 * comes out in GitHub's shape: a bad path parameter is a 404, a bad query
 * value a 422 `Validation Failed`.
 */
export function githubApiRoutes(options: GithubApiOptions): FastifyPluginAsyncZod {
  return async (server) => {
    server.setValidatorCompiler(validatorCompiler);
    server.setSerializerCompiler(serializerCompiler);
    server.setErrorHandler(githubErrorHandler);
    server.addHook('onRequest', requireToken(options.tokens));
    // Query values read as GitHub reads them: a parameter given twice counts once, with its last value, and a page
    // number is its leading digits (PyGithub's `reversed` asks for `…&page=3?per_page=2`), none at all without them.
    server.addHook('preValidation', async (request) => {
      const query = request.query as Record<string, unknown>;
      for (const [key, value] of Object.entries(query)) if (Array.isArray(value)) query[key] = value.at(-1);
      for (const key of ['page', 'per_page']) {
        if (typeof query[key] !== 'string') continue;
        // A value that does not start with a number is not given at all (GitHub's default applies), as on GitHub.
        const number = /^-?\d+/.exec(query[key] as string)?.[0];
        if (number === undefined) delete query[key];
        else query[key] = number;
      }
    });
    // Every answer, errors included, carries GitHub's rate-limit headers.
    server.addHook('onSend', async (_request, reply) => {
      reply.headers(rateLimitHeaders());
    });
    server.setNotFoundHandler(async (_request, reply) => sendError(reply, 404, 'Not Found'));
    const deps = { database: options.database, links: new AttachmentLinks(options.database), publicUrl: options.publicUrl };
    // The repository's git data, read from the import mirrors (not served without them); a branch named with
    // unencoded slashes (`/branches/release/1.x`) reaches it through repo-routes' `/branches/*`.
    const gitDeps = options.gitData ? { ...deps, mirrors: new MirrorLocator(options.database, options.gitData) } : undefined;
    if (gitDeps) {
      server.addHook('onClose', async () => gitDeps.mirrors.close());
      gitDataRoutes(server, gitDeps);
    }
    repoRoutes(server, deps, gitDeps && ((request, reply, params, branch) => answerBranch(gitDeps, request, reply, params, branch, server.prefix)));
    issueRoutes(server, deps);
    pullRoutes(server, deps);
    objectRoutes(server, deps);
    timelineRoutes(server, deps);
    attachmentRoutes(server, { ...deps, filesDir: options.filesDir });
    rateLimitRoutes(server);
    // GraphQL (gh's `issue list`, `pr view`…), in a scope of its own that reads the raw body.
    await graphqlRoutes(server, deps);
  };
}
