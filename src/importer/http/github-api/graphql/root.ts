import { githubError, repositoryNotFound } from './errors.js';
import { VIEWER_LOGIN, type RequestScope } from './context.js';
import { viewerUser, userOf } from './models/actor.js';
import { RepositoryModel } from './models/repository.js';
import { nodeById } from './node-ids.js';
import { searchIssues } from './search.js';
import type { PageArgs } from './connection.js';
import { userData } from '../../../store/read-api.js';

/*
 * The root fields, as the root value of one request's execution: each
 * reads through the request's scope (what the reader may see).
 */

const MAX_IDS = 100;

export function rootValue(request: RequestScope) {
  return {
    async repository(args: { owner: string; name: string }) {
      const scope = await request.repository(args.owner, args.name);
      const json = scope ? await scope.repository() : undefined;
      if (!scope || !json) throw repositoryNotFound(args.owner, args.name);
      return new RepositoryModel(json, scope);
    },

    async node(args: { id: string }) {
      request.readsBeyondImports();
      const found = await nodeById(request, args.id);
      if (!found) throw githubError('NOT_FOUND', `Could not resolve to a node with the global id of '${args.id}'`);
      return found;
    },

    async nodes(args: { ids: string[] }) {
      request.readsBeyondImports();
      if (args.ids.length > MAX_IDS) throw githubError('ARGUMENT_LIMIT', `You may not request more than ${MAX_IDS} ids at once.`);
      return Promise.all(args.ids.map((id) => nodeById(request, id)));
    },

    /** A synthetic user: the copy's readers hold tokens of its own, not GitHub accounts. */
    viewer() {
      return viewerUser(VIEWER_LOGIN);
    },

    async user(args: { login: string }) {
      request.readsBeyondImports();
      const found = await userData(request.deps.database, args.login);
      if (!found) throw githubError('NOT_FOUND', `Could not resolve to a User with the login of '${args.login}'.`);
      return userOf(JSON.parse(found.data), null);
    },

    search(args: PageArgs & { type: string; query: string }) {
      return searchIssues(request, args);
    },

    rateLimit() {
      request.readsBeyondImports();
      const resetAt = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
      return { cost: 1, limit: 5000, nodeCount: 0, remaining: 5000, resetAt, used: 0 };
    },
  };
}
