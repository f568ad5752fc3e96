import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseTree, type TreeEntry } from '../../../../git/cat-file.js';
import { InvalidSnapshotRequestError, isObjectId, validateTreePath } from '../../../../snapshots/api.js';
import { repoRoute, routeOptions, type ApiServer, type RepoLocator } from '../context.js';
import { GithubApiError, notFound } from '../errors.js';
import { sendJson } from '../respond.js';
import { RepoParams } from '../schemas.js';
import { contentTypeOf, directoryItem, fileBody, readmeOf, submoduleBody, type ContentObject } from './contents.js';
import type { MirrorGit } from './mirror-git.js';
import { blobBody, treeEntry } from './payloads.js';
import { openGitData, type GitDataRequest, type GitDataDeps } from './request.js';
import { ArchiveParams, BlobShaParams, OptionalWildcardParams, RefQuery, TreeQuery, TreeShaParams, type ArchiveFormat } from './schemas.js';
import { missing } from './source.js';

/** GitHub truncates a recursive tree past this many entries. */
const MAX_TREE_ENTRIES = 100_000;
const RAW_TYPE = 'text/plain; charset=utf-8';

/** Which form of `/contents` the `Accept` header asks for: GitHub's JSON, the raw bytes, or the object form of a directory. */
function mediaOf(request: FastifyRequest): 'json' | 'raw' | 'object' {
  const accept = request.headers.accept ?? '';
  if (/application\/vnd\.github(\.v3)?\.raw/.test(accept)) return 'raw';
  if (/application\/vnd\.github(\.v3)?\.object/.test(accept)) return 'object';
  return 'json';
}

/** A path parameter as a clean tree path, or a 404 for one that is not (`..`, NUL…). */
function treePathOf(path: string | undefined): string {
  try {
    return validateTreePath(path ?? '');
  } catch (error) {
    if (error instanceof InvalidSnapshotRequestError) throw notFound();
    throw error;
  }
}

/** The commit `ref` names: GitHub's 404 "No commit found for the ref …" when none. */
async function commitForRef(git: MirrorGit, ref: string): Promise<string> {
  const sha = await git.commitNamed(ref);
  if (sha === undefined) throw await missing(git, new GithubApiError(404, `No commit found for the ref ${ref}`));
  return sha;
}

/** The entries of the tree at `path` of `commit`, or undefined when that is no directory. */
async function directoryAt(git: MirrorGit, commit: string, path: string): Promise<TreeEntry[] | undefined> {
  const object = await git.at(commit, path);
  return object?.type === 'tree' && object.content ? parseTree(object.content, object.oid.length) : undefined;
}

/** What is at `path` of `commit` as content: the directory's entry for it (its mode says file, symlink or submodule). */
async function contentAt(git: MirrorGit, commit: string, path: string): Promise<ContentObject | undefined> {
  if (path === '') {
    const root = await git.at(commit, '');
    return root ? { path: '', sha: root.oid, type: 'dir', size: 0 } : undefined;
  }
  const slash = path.lastIndexOf('/');
  const entries = await directoryAt(git, commit, slash < 0 ? '' : path.slice(0, slash));
  const entry = entries?.find((candidate) => candidate.name === path.slice(slash + 1));
  return entry ? { path, sha: entry.oid, type: contentTypeOf(entry), size: 0 } : undefined;
}

/** A directory's entries as content objects (blob sizes read in one batch). */
async function listing(git: MirrorGit, path: string, entries: TreeEntry[]): Promise<ContentObject[]> {
  const sizes = await git.sizes(entries.filter((entry) => entry.type === 'blob').map((entry) => entry.oid));
  return entries.map((entry) => ({ path: path === '' ? entry.name : `${path}/${entry.name}`, sha: entry.oid, type: contentTypeOf(entry), size: sizes.get(entry.oid) ?? 0 }));
}

/** Answers `/contents/{path}` (and `/readme`) for `object` at `ref`, in the form `Accept` asks for. */
async function answerContent(request: FastifyRequest, reply: FastifyReply, gitData: GitDataRequest, ref: string, object: ContentObject): Promise<FastifyReply> {
  const { git, repo } = gitData;
  const media = mediaOf(request);
  if (object.type === 'submodule') return sendJson(request, reply, submoduleBody(repo, ref, object));
  if (object.type === 'dir') {
    const tree = await git.tree(object.sha);
    const items = (await listing(git, object.path, tree?.entries ?? [])).map((item) => directoryItem(repo, ref, item));
    if (media !== 'object') return sendJson(request, reply, items);
    const name = object.path.slice(object.path.lastIndexOf('/') + 1);
    return sendJson(request, reply, { ...directoryItem(repo, ref, object), name, type: 'dir', entries: items });
  }
  const blob = await git.object(object.sha);
  if (!blob?.content) throw notFound();
  if (media === 'raw') {
    return reply.code(200).header('content-type', RAW_TYPE).header('x-github-media-type', 'github.v3; param=raw').header('etag', `"${object.sha}"`).send(blob.content);
  }
  return sendJson(request, reply, fileBody(repo, ref, { ...object, size: blob.size }, blob.content));
}

/** A tree's entries, recursively in git's order (a directory, then what is in it) when asked, up to GitHub's cap. */
async function treeEntries(git: MirrorGit, entries: TreeEntry[], { recursive }: { recursive: boolean }): Promise<{ items: { entry: TreeEntry; path: string }[]; truncated: boolean }> {
  const items: { entry: TreeEntry; path: string }[] = [];
  const walk = async (list: TreeEntry[], dir: string): Promise<boolean> => {
    for (const entry of list) {
      if (items.length >= MAX_TREE_ENTRIES) return false;
      const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
      items.push({ entry, path });
      if (recursive && entry.type === 'tree') {
        const sub = await git.tree(entry.oid);
        if (sub && !(await walk(sub.entries, path))) return false;
      }
    }
    return true;
  };
  const complete = await walk(entries, '');
  return { items, truncated: !complete };
}

/** Trees, blobs, contents, the README and archives, read from the mirror's objects. */
export function contentRoutes(server: ApiServer, deps: GitDataDeps): void {
  objectRoutes(server, deps);
  contentsRoutes(server, deps);
  archiveRoutes(server, deps);
}

/** Tree and blob objects. */
function objectRoutes(server: ApiServer, deps: GitDataDeps): void {
  const prefix = server.prefix;

  repoRoute(server, '/git/trees/:tree_sha', routeOptions('Tree', 'Get a tree', { params: TreeShaParams, querystring: TreeQuery }), async (request, reply) => {
    const gitData = await openGitData(deps, request, reply, prefix, request.params);
    if (!gitData) return reply;
    const { git, repo } = gitData;
    const wanted = request.params.tree_sha;
    // A sha names a tree (or a commit's); anything else is a ref, as GitHub takes `main` there too.
    const sha = isObjectId(wanted.toLowerCase()) ? wanted.toLowerCase() : await git.commitNamed(wanted);
    const tree = sha === undefined ? undefined : await git.tree(sha);
    if (!tree) throw await missing(git);
    const { items, truncated } = await treeEntries(git, tree.entries, { recursive: request.query.recursive !== undefined });
    const sizes = await git.sizes(items.filter((item) => item.entry.type === 'blob').map((item) => item.entry.oid));
    return sendJson(request, reply, {
      sha: tree.sha,
      url: `${repo.api}/git/trees/${tree.sha}`,
      tree: items.map((item) => treeEntry(repo, item.entry, item.path, sizes.get(item.entry.oid))),
      truncated,
    });
  });

  repoRoute(server, '/git/blobs/:file_sha', routeOptions('Blob', 'Get a blob', { params: BlobShaParams }), async (request, reply) => {
    const gitData = await openGitData(deps, request, reply, prefix, request.params);
    if (!gitData) return reply;
    const sha = request.params.file_sha;
    if (!isObjectId(sha)) throw new GithubApiError(422, 'The sha parameter must be exactly 40 characters and contain only [0-9a-f].');
    const blob = await gitData.git.object(sha);
    if (blob?.type !== 'blob' || !blob.content) throw await missing(gitData.git);
    if (mediaOf(request) === 'raw') return reply.code(200).header('content-type', RAW_TYPE).header('x-github-media-type', 'github.v3; param=raw').send(blob.content);
    return sendJson(request, reply, blobBody(gitData.repo, blob.oid, blob.content));
  });
}

/** Contents of a path and the README, at a ref. */
function contentsRoutes(server: ApiServer, deps: GitDataDeps): void {
  const prefix = server.prefix;

  const contents = async (request: FastifyRequest, reply: FastifyReply, params: RepoLocator, rawPath: string | undefined, ref: string | undefined) => {
    const gitData = await openGitData(deps, request, reply, prefix, params);
    if (!gitData) return reply;
    const path = treePathOf(rawPath);
    const name = ref ?? gitData.defaultBranch;
    const object = await contentAt(gitData.git, await commitForRef(gitData.git, name), path);
    if (!object) throw notFound();
    return answerContent(request, reply, gitData, name, object);
  };
  repoRoute(server, '/contents', routeOptions('Content', 'Get the repository root', { params: RepoParams, querystring: RefQuery }), async (request, reply) =>
    contents(request, reply, request.params, '', request.query.ref),
  );
  repoRoute(server, '/contents/*', routeOptions('Content', 'Get repository content', { params: OptionalWildcardParams('a path in the repository'), querystring: RefQuery }), async (request, reply) =>
    contents(request, reply, request.params, request.params['*'], request.query.ref),
  );

  const readme = async (request: FastifyRequest, reply: FastifyReply, params: RepoLocator, rawDir: string | undefined, ref: string | undefined) => {
    const gitData = await openGitData(deps, request, reply, prefix, params);
    if (!gitData) return reply;
    const dir = treePathOf(rawDir);
    const name = ref ?? gitData.defaultBranch;
    const entries = await directoryAt(gitData.git, await commitForRef(gitData.git, name), dir);
    const entry = entries ? readmeOf(entries) : undefined;
    if (!entry) throw notFound();
    return answerContent(request, reply, gitData, name, { path: dir === '' ? entry.name : `${dir}/${entry.name}`, sha: entry.oid, type: contentTypeOf(entry), size: 0 });
  };
  repoRoute(server, '/readme', routeOptions('Content', 'Get a repository README', { params: RepoParams, querystring: RefQuery }), async (request, reply) =>
    readme(request, reply, request.params, '', request.query.ref),
  );
  repoRoute(server, '/readme/*', routeOptions('Content', 'Get a repository README for a directory', { params: OptionalWildcardParams('a directory'), querystring: RefQuery }), async (request, reply) =>
    readme(request, reply, request.params, request.params['*'], request.query.ref),
  );
}

/**
 * `/tarball/{ref}` and `/zipball/{ref}` answer as GitHub does: 302 to where
 * the archive of that commit is downloaded (GitHub's codeload host; here
 * `…/_codeload/<format>/<sha>` on the copy, same origin, so a client that
 * follows it keeps its token), 404 for a ref that names nothing. The
 * download streams `git archive` of the commit.
 */
function archiveRoutes(server: ApiServer, deps: GitDataDeps): void {
  const prefix = server.prefix;
  const redirect = (format: ArchiveFormat) => async (request: FastifyRequest, reply: FastifyReply, params: RepoLocator, ref: string | undefined) => {
    const gitData = await openGitData(deps, request, reply, prefix, params);
    if (!gitData) return reply;
    const sha = await gitData.git.commitNamed(ref || gitData.defaultBranch);
    if (sha === undefined) throw await missing(gitData.git);
    return reply.code(302).header('location', `${gitData.repo.api}/_codeload/${format}/${sha}`).send();
  };
  for (const format of ['tar.gz', 'zip'] as const) {
    const route = format === 'zip' ? 'zipball' : 'tarball';
    const answer = redirect(format);
    repoRoute(server, `/${route}`, routeOptions('Archive', `Download a repository archive (${format})`, { params: RepoParams }), async (request, reply) =>
      answer(request, reply, request.params, undefined),
    );
    repoRoute(server, `/${route}/*`, routeOptions('Archive', `Download a repository archive (${format}) of a ref`, { params: OptionalWildcardParams('a branch, tag or sha') }), async (request, reply) =>
      answer(request, reply, request.params, request.params['*']),
    );
  }
  repoRoute(
    server,
    '/_codeload/:format/:sha',
    { ...routeOptions('Archive', 'The archive a /tarball or /zipball redirect names', { params: ArchiveParams }), schema: { hide: true, params: ArchiveParams } },
    async (request, reply) => {
      const gitData = await openGitData(deps, request, reply, prefix, request.params);
      if (!gitData) return reply;
      const { git, repo } = gitData;
      const { format, sha } = request.params;
      if ((await git.commitNamed(sha)) !== sha) throw notFound();
      const name = `${repo.owner}-${repo.name}-${sha.slice(0, 7)}`;
      const child = git.archive(sha, format, `${name}/`);
      reply.raw.once('close', () => child.stop());
      return reply
        .code(200)
        .header('content-type', format === 'zip' ? 'application/zip' : 'application/x-gzip')
        .header('content-disposition', `attachment; filename=${name}.${format}`)
        .send(child.child.stdout);
    },
  );
}
