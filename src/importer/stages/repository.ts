import { GithubProjectNotFoundError, GithubRequestError } from '../errors.js';
import { PageBatch } from '../run/batch.js';
import type { RunContext } from '../run/context.js';
import { messageOf } from '../run/walk.js';
import { findCursor, startCursor, writeCursorStep } from '../store/cursors.js';
import { storedRepository } from '../store/objects.js';
import { storedRepositoryId } from '../store/reconcile-deletions.js';
import type { StageEnv } from './index.js';

/** Where GitHub says the repository is now. */
interface RepositoryName {
  owner: string;
  repo: string;
}

/**
 * The repository stage: the repository itself, conditionally on a sync,
 * asked by its GitHub id once a run stored it (`/repositories/{id}`: the
 * same answer and ETag as `/repos/{o}/{r}`, and the id survives a rename or
 * a transfer). When GitHub names it otherwise than the import does, the
 * import follows: its owner and name are updated with the repository's row,
 * the run goes on under the new name, and a warning says so. A 404 (or 403,
 * 451) is GithubProjectNotFoundError as ever.
 */
export async function repositoryStage(ctx: RunContext, env: StageEnv): Promise<void> {
  const cursor = startCursor('repository', ctx.run, await findCursor(ctx.db, ctx.importId, 'repository'));
  const id = await storedRepositoryId(ctx.db, ctx.importId);
  const path = id !== null ? `/repositories/${id}` : ctx.repoPath;
  const response = await ctx.client.get(path, { etag: ctx.record.mode === 'sync' ? cursor.etag : null });
  let repo: any;
  if (response.status === 304) {
    repo = await storedRepository(ctx.db, ctx.importId);
  } else if (response.status === 404 || response.status === 403 || response.status === 451) {
    throw new GithubProjectNotFoundError(`${ctx.record.owner}/${ctx.record.repo}`, ctx.record.apiUrl);
  } else if (response.status !== 200) {
    throw new GithubRequestError(path, response.status, messageOf(response.data));
  } else repo = response.data;
  if (typeof repo?.html_url === 'string') ctx.hosts.addWebUrl(repo.html_url);
  const moved = movedTo(ctx, repo);
  const sources = await env.ensureSources(ctx, repo);
  const batch = new PageBatch(ctx);
  if (response.status === 200) batch.add({ type: 'repository', key: 'repository', number: Number.isSafeInteger(repo.id) && repo.id >= 0 ? repo.id : null, createdAt: repo.created_at, updatedAt: repo.updated_at, data: repo });
  await ctx.commit([
    ...(await batch.steps()),
    ctx.imports.setSourcesStep(ctx.importId, sources.repository, sources.wiki),
    moved ? ctx.imports.setRepositoryNameStep(ctx.importId, moved.owner, moved.repo, Date.now()) : null,
    writeCursorStep(ctx.db, ctx.importId, { ...cursor, done: true, etag: response.etag ?? cursor.etag, pages: cursor.pages + 1 }, Date.now()),
  ]);
  if (moved) follow(ctx, moved);
}

/** The repository's owner and name when GitHub's answer names it otherwise than the import does (GitHub's names ignore case), else null. */
function movedTo(ctx: RunContext, repo: any): RepositoryName | null {
  const owner: unknown = repo?.owner?.login;
  const name: unknown = repo?.name;
  if (typeof owner !== 'string' || typeof name !== 'string' || owner === '' || name === '') return null;
  const same = owner.toLowerCase() === ctx.record.owner.toLowerCase() && name.toLowerCase() === ctx.record.repo.toLowerCase();
  return same ? null : { owner, repo: name };
}

/**
 * The rest of the run asks the repository by its new name: the run's record
 * (which the per-object jobs of this process share; the others read the
 * stored one, updated in the same batch as the repository row).
 */
function follow(ctx: RunContext, moved: RepositoryName): void {
  const from = `${ctx.record.owner}/${ctx.record.repo}`;
  const to = `${moved.owner}/${moved.repo}`;
  ctx.record.owner = moved.owner;
  ctx.record.repo = moved.repo;
  ctx.logger.warn(
    { event: 'import_repository_moved', import: ctx.importName, from, to },
    `import ${ctx.importName}: the repository ${from} is now ${to} on GitHub (renamed or transferred; followed by its id); the import follows it`,
  );
}
