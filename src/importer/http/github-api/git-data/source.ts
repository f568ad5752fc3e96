import type { FastifyReply, FastifyRequest } from 'fastify';
import { CatFiles } from '../../../../git/cat-file.js';
import type { GitRunner } from '../../../../git/runner.js';
import { relay, type ShardReads } from '../../../../cluster/api.js';
import { callerOf } from '../../../../server/auth.js';
import { ImportRepository } from '../../../store/imports.js';
import type { ApiDatabase } from '../../../store/read-api.js';
import { GithubApiError, notFound } from '../errors.js';
import { MirrorGit } from './mirror-git.js';

/**
 * Where the git-data routes find an import's repository: the mirror of its
 * replication source (`repositorySource` of the import record), as served
 * (its served view, whose refs move all at once), and in distributed mode
 * which shard's worker holds it.
 */
export interface GitDataSource {
  runner: GitRunner;
  /** The served view of source `name`'s mirror on this process; undefined when there is no such source or no mirror here yet. */
  mirrorOf(name: string): Promise<string | undefined>;
  /** Distributed mode: where a source's files are; a read of another shard's mirror is forwarded whole to its worker. */
  shardFiles?: ShardReads | undefined;
}

/** A shard's worker, as the cluster names it. */
type ShardTarget = NonNullable<Awaited<ReturnType<ShardReads['endpointFor']>>>;

/** The request headers a forwarded git-data request keeps: what it asks for (media type) and its validators. */
const FORWARDED_HEADERS = ['accept', 'if-none-match', 'if-modified-since'];

/**
 * Sends a git-data request whole to the worker of the mirror's shard (which
 * serves the same API over its own mirrors, cluster token in hand) and
 * answers with what it answered: bytes (archives, raw contents) streamed as
 * they come; JSON with the worker's own base in its links (it links below
 * the origin it was reached by, unless FORGESYNC_PUBLIC_URL is set there
 * too) replaced by the copy's, in the body and in `Link` and `Location`.
 */
async function forwardWhole(shardFiles: ShardReads, target: ShardTarget, request: FastifyRequest, reply: FastifyReply, bases: { copy: string; prefix: string }): Promise<FastifyReply> {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  const asked: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') asked[name] = value;
  }
  const answer = await shardFiles.send(target, { method: request.method, url: request.url, headers: asked, redirects: 'relay' }, callerOf(request) ?? 'github-api', controller.signal);
  const toCopy = (text: string) => text.split(`${target.endpoint.replace(/\/+$/, '')}${bases.prefix}`).join(bases.copy);
  const headers = { ...answer.headers };
  for (const name of ['link', 'location'] as const) if (headers[name]) headers[name] = toCopy(headers[name]);
  if (!answer.body || !(answer.headers['content-type'] ?? '').includes('json')) return relay(reply, { ...answer, headers });
  const chunks: Buffer[] = [];
  for await (const chunk of answer.body) chunks.push(chunk as Buffer);
  return reply.code(answer.status).headers(headers).send(toCopy(Buffer.concat(chunks).toString('utf8')));
}

/** Stopped after this long without a request, as the snapshots' readers are. */
const IDLE_MS = 30_000;

/** The mirror a request reads, or that it was answered elsewhere (forwarded to the shard's worker). */
export type MirrorLookup = { kind: 'here'; git: MirrorGit } | { kind: 'forwarded'; reply: FastifyReply };

/**
 * Opens import mirrors for the routes: one long-lived `cat-file` per mirror
 * (idle ones stop by themselves), the import's source looked up per request.
 */
export class MirrorLocator {
  readonly #catFiles: CatFiles;
  readonly #imports: ImportRepository;

  constructor(
    database: ApiDatabase,
    private readonly source: GitDataSource,
  ) {
    this.#imports = new ImportRepository(database);
    this.#catFiles = new CatFiles(source.runner, IDLE_MS);
  }

  /**
   * The mirror of import `importId`. In distributed mode, when the mirror is
   * on another shard, the whole request is forwarded to that shard's worker
   * (which serves the same routes over its own files) and its answer relayed.
   * @throws GithubApiError 404 when the import has no repository source, 409 when its mirror is not there yet
   */
  async open(importId: number, request: FastifyRequest, reply: FastifyReply, bases: { copy: string; prefix: string }): Promise<MirrorLookup> {
    const record = await this.#imports.findById(importId);
    const name = record?.repositorySource;
    if (!name) throw notFound();
    const { shardFiles } = this.source;
    const remote = await shardFiles?.endpointFor(name);
    if (remote) return { kind: 'forwarded', reply: await forwardWhole(shardFiles!, remote, request, reply, bases) };
    const gitDir = await this.source.mirrorOf(name);
    if (gitDir === undefined) throw new GithubApiError(409, 'Git Repository is empty.');
    return { kind: 'here', git: new MirrorGit(this.source.runner, this.#catFiles.of(gitDir), gitDir) };
  }

  /** Stops every long-lived reader. */
  close(): void {
    this.#catFiles.close();
  }
}

/**
 * The error for something not found in `git`: GitHub's 409 "Git Repository
 * is empty." when the repository has no refs at all (checked only then, so
 * found objects cost no extra git run), else `otherwise` (a 404 by default).
 */
export async function missing(git: MirrorGit, otherwise: GithubApiError = notFound()): Promise<GithubApiError> {
  return (await git.isEmpty()) ? new GithubApiError(409, 'Git Repository is empty.') : otherwise;
}
