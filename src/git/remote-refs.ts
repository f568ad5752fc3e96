import { lstatSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ResolvedHost } from '../egress/address.js';
import { CredentialRedirectError, EgressNetworkError, EgressTimeoutError } from '../egress/errors.js';
import { requestFollowingRedirects, type PinnedResponse } from '../egress/http.js';
import { proxyConfigured } from '../egress/proxy.js';
import { authorizationValue } from './env.js';
import { GitAbortedError, GitTimeoutError } from './errors.js';
import {
  lsRemote,
  OBJECT_ID,
  objectsPresent,
  readHeadFile,
  readRefFiles,
  type RefMap,
  type RemoteCallOptions,
  type RemoteListing,
} from './refs.js';
import type { GitRunner, PreparedRemote } from './runner.js';

// ---------------------------------------------------------------------------
// `git ls-remote --symref` costs a git process plus the upload-pack (or
// git-remote-https) it starts, 5-10 ms of CPU, and runs before every sync.
// - For an upstream on this machine the same answer is in a few small files,
//   read here in-process with the readers the mirror side already uses (refs.ts).
// - For an http(s) upstream it is one GET of the smart-HTTP ref advertisement,
//   the request GitRunner.prepareRemote makes anyway to resolve redirects.
// As in refs.ts, this code only answers when it is sure to answer what git
// would; anything unusual (a config that could change the advertisement, a
// layout it does not know, an odd ref, a repository git would refuse, a proxy,
// an HTTP status other than 200) returns undefined and git is asked, so every
// error, and every "not found", is still git's.

/** Longest path git's `enter_repo` accepts (PATH_MAX less its suffix room). */
const MAX_PATH = 4096 - 10;

/**
 * Lists the upstream's refs and HEAD exactly as {@link lsRemote} does, without
 * a process where that is safe: from the repository's files for a plain local
 * upstream, from the smart-HTTP GET that prepared an http(s) one, from
 * `git ls-remote --symref` otherwise (and whenever in doubt). A URL is
 * prepared first (`runner.prepareRemote`, with `options.token`).
 * @throws InvalidRemoteUrlError before anything is read if the URL is refused;
 *   EgressRefusedError before anything is sent to a refused address;
 *   RemoteNotFoundError when the upstream repository does not exist (as git reports it);
 *   GitTimeoutError, GitAbortedError on the runner's timeout or the abort signal.
 */
export async function listRemote(runner: GitRunner, upstream: string | PreparedRemote, options: RemoteCallOptions = {}): Promise<RemoteListing> {
  // First, always: the allowlist decides whether a local path may be read at all (prepareRemote validates).
  const remote = typeof upstream === 'string' ? await runner.prepareRemote(upstream, options) : upstream;
  if (!options.signal?.aborted) {
    if (remote.listing) return remote.listing;
    if (remote.protocol === 'file') {
      const gitDir = localGitDir(remote.url);
      const listing = gitDir === undefined ? undefined : readLocalListing(gitDir);
      if (listing) return listing;
    }
  }
  return lsRemote(runner, remote, options);
}

/**
 * What `git ls-remote --symref` would list for the repository at `gitDir` (a
 * bare repository or a `.git` directory), read from its files; undefined when
 * git must be asked.
 */
export function readLocalListing(gitDir: string): RemoteListing | undefined {
  try {
    return readListing(gitDir);
  } catch {
    return undefined; // changed or vanished while read: git looks
  }
}

function readListing(gitDir: string): RemoteListing | undefined {
  // upload-pack dies on a repository another user owns ("dubious ownership"); safe.directory
  // cannot be set for the runner (no global config), so that answer is git's to give.
  if (statSync(gitDir).uid !== process.geteuid?.()) return undefined;
  // A namespace filters and renames what upload-pack advertises. The runner passes no
  // GIT_NAMESPACE today; should that change, git must answer.
  if (process.env.GIT_NAMESPACE) return undefined;
  if (!plainConfig(gitDir) || lstatSync(join(gitDir, 'commondir'), { throwIfNoEntry: false })) return undefined;
  // A symlinked HEAD (an old git's form) would be read as its target's contents.
  if (!lstatSync(join(gitDir, 'HEAD')).isFile()) return undefined;
  const head = readHeadFile(gitDir);
  const symbolic = new Set<string>();
  const refs = readRefFiles(gitDir, symbolic);
  if (head === undefined || refs === undefined) return undefined;
  // upload-pack skips a ref whose object is missing; which ones it would skip is git's call.
  if (refs.size > 0 && objectsPresent(gitDir, refs.values()) !== true) return undefined;
  // HEAD through another symbolic ref: git names the last target; left to git.
  if (head !== null && symbolic.has(head)) return undefined;
  // Detached: HEAD is listed with an id, without a symref. Unborn (its branch does
  // not exist): not listed at all (ls-remote does not ask for unborn HEADs).
  return { refs, head: head !== null && refs.has(head) ? head : undefined };
}

/**
 * The git directory upload-pack would open for a local upstream, found the way
 * git's `enter_repo` looks (`<p>/.git`, `<p>`, `<p>.git/.git`, `<p>.git`);
 * undefined for a remote URL, a missing repository, a `.git` file (gitdir
 * link) or any path git might read differently.
 */
function localGitDir(remote: string): string | undefined {
  let path = remote;
  if (/^file:/i.test(remote)) {
    // git takes everything after `file://` as the path and percent-decodes it; `?` and `#`
    // are part of that path for git but not for a URL parser: leave those to git.
    const rest = remote.slice('file://'.length);
    if (!rest.startsWith('/') || /[?#]/.test(rest)) return undefined;
    try {
      path = decodeURIComponent(rest);
    } catch {
      return undefined;
    }
  }
  // eslint-disable-next-line no-control-regex
  if (!path.startsWith('/') || path.startsWith('//') || path.length > MAX_PATH || /[\u0000-\u001f]/.test(path)) return undefined;
  path = path.replace(/\/+$/, '');
  if (path === '') return undefined;
  try {
    for (const candidate of [`${path}/.git`, path, `${path}.git/.git`, `${path}.git`]) {
      const info = statSync(candidate, { throwIfNoEntry: false });
      if (!info) continue;
      if (info.isFile()) return undefined; // a gitdir link (or a bundle): git reads those
      if (info.isDirectory() && isGitDirectory(candidate)) return candidate;
    }
  } catch {
    return undefined; // ENOTDIR, EACCES…: git explains
  }
  return undefined; // missing: git reports it, and the caller maps that to RemoteNotFoundError
}

/** git's `is_git_directory`: `objects/` and `refs/` are there and HEAD is a HEAD. */
function isGitDirectory(dir: string): boolean {
  const objects = statSync(join(dir, 'objects'), { throwIfNoEntry: false });
  const refs = statSync(join(dir, 'refs'), { throwIfNoEntry: false });
  return Boolean(objects?.isDirectory() && refs?.isDirectory() && readHeadFile(dir) !== undefined);
}

/**
 * The repository's config holds nothing that could change what upload-pack
 * advertises or how refs are stored: no hideRefs (any section), no
 * `extensions` (ref storage, object format…), no includes, a format version
 * of 0 or 1. A word match on the raw text: a false alarm only costs a git call.
 */
function plainConfig(gitDir: string): boolean {
  let text = '';
  try {
    text = readFileSync(join(gitDir, 'config'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return false;
  }
  if (/hiderefs|\[\s*(extensions|include|includeif)\b/i.test(text)) return false;
  const mentions = text.match(/repositoryformatversion/gi)?.length ?? 0;
  const versions = [...text.matchAll(/repositoryformatversion[ \t]*=[ \t]*([^\s;#]*)/gi)].map((match) => match[1]);
  return versions.length === mentions && versions.every((version) => version === '0' || version === '1');
}

// ---------------------------------------------------------------------------
// Smart HTTP: `GET <url>/info/refs?service=git-upload-pack` answers with the
// protocol v0 ref advertisement (no `Git-Protocol: version=2` header is sent):
// the same refs and HEAD symref `ls-remote` gets through protocol v2.
//
// It is also where redirects are resolved. git never follows one
// (`http.followRedirects=false`, env.ts): forgesync follows them here, the way
// git's `http.followRedirects=initial` would on this first request, checking
// every hop against the egress policy and sending the token only where the
// credential allows, then gives git the URL git would have rebased the remote
// on (the redirect target minus `/info/refs?service=git-upload-pack`).

/** git's `http.followRedirects=initial` allows this many hops (curl's CURLOPT_MAXREDIRS in git). */
const MAX_REDIRECTS = 20;
const ADVERTISEMENT_TYPE = 'application/x-git-upload-pack-advertisement';
const INFO_REFS = 'info/refs?service=git-upload-pack';
/**
 * TLS settings: git's own (which the runner does not pass on today) and those
 * that would make Node trust what git refuses (extra CAs, no verification). An
 * https upstream is left to git when any is set; plain http has no TLS.
 */
const TLS_ENV = /^(GIT_SSL_\w+|SSL_CERT_(FILE|DIR)|NODE_EXTRA_CA_CERTS|NODE_TLS_REJECT_UNAUTHORIZED)$/i;

/** Some variable whose name matches `pattern` is set (non-empty). */
const envHas = (pattern: RegExp): boolean => Object.entries(process.env).some(([name, value]) => value && pattern.test(name));

/** Where an http(s) upstream really is: the URL to give git, its checked host, and the listing if it was clean. */
export interface HttpRemote {
  url: string;
  target: ResolvedHost;
  listing: RemoteListing | undefined;
}

/**
 * Resolves an http(s) upstream for GitRunner.prepareRemote: its host is
 * resolved and checked; then, when forgesync can make the request as git
 * would (no proxy, no TLS setting Node and git would read differently, no
 * user name, query or fragment in the URL), one GET of the ref advertisement,
 * following redirects git would follow and rebase on, each hop checked first.
 * The token goes to a hop only if `tokenAllowed` accepts it; a redirect to an
 * origin it refuses is refused (CredentialRedirectError), not followed without
 * the token. A redirect git could not rebase on, or one to a transport that is
 * not allowed, ends the resolution: git gets the URL it came from and, not
 * following redirects, reports it. Anything else unusual (an error status, a
 * network error, a dumb server) leaves the listing to git, at the URL
 * resolved so far.
 * @throws EgressRefusedError, EgressLookupError; CredentialRedirectError;
 *   GitTimeoutError, GitAbortedError: as the git process would have been killed.
 */
export async function resolveHttpRemote(
  runner: GitRunner,
  remote: string,
  options: { token?: string; tokenAllowed: (url: URL) => boolean; signal?: AbortSignal; timeoutMs: number },
): Promise<HttpRemote> {
  const { token, tokenAllowed, signal, timeoutMs } = options;
  let url = new URL(remote);
  const target = await runner.egress.resolve(url.hostname, { ...(signal ? { signal } : {}), timeoutMs });
  // A user name (git would ask for the password), a query or a fragment: git knows what it means.
  if (!inProcess(url) || url.username !== '' || url.search !== '' || url.hash !== '') return { url: remote, target, listing: undefined };
  url = new URL(`${url.href}${url.href.endsWith('/') ? '' : '/'}${INFO_REFS}`);
  const command = `GET ${url.origin}${url.pathname}`;
  const baseOf = (answered: URL): string => (answered.href === url.href ? remote : answered.href.slice(0, -`/${INFO_REFS}`.length));
  let reply: PinnedResponse;
  try {
    reply = await requestFollowingRedirects(url, {
      policy: runner.egress,
      target,
      timeoutMs,
      maxBytes: runner.maxStdoutBytes,
      maxRedirects: MAX_REDIRECTS,
      ...(signal ? { signal } : {}),
      headers: (hop) => ({
        'User-Agent': 'git/forgesync',
        Accept: '*/*',
        'Accept-Encoding': 'identity',
        Pragma: 'no-cache',
        ...(token !== undefined && tokenAllowed(hop) ? { Authorization: authorizationValue(token) } : {}),
      }),
      follow: (next, from) => {
        // Before anything is sent there: the token never goes where the credential does not allow.
        if (token !== undefined && next.origin !== from.url.origin && !tokenAllowed(next)) throw new CredentialRedirectError(from.url.origin, next.origin);
        const scheme = next.protocol.slice(0, -1);
        // git rebases the remote on the new URL only when it still ends with the request's tail.
        if (!`${next.pathname}${next.search}`.endsWith(`/${INFO_REFS}`) || next.username || next.password || next.hash) return false;
        return (scheme === 'http' || scheme === 'https') && runner.protocols.has(scheme) && inProcess(next);
      },
    });
  } catch (error) {
    if (error instanceof EgressNetworkError) return { url: baseOf(error.url), target: error.target, listing: undefined };
    if (error instanceof EgressTimeoutError) throw new GitTimeoutError(command, timeoutMs);
    if (signal?.aborted) throw new GitAbortedError(command, signal.reason);
    throw error;
  }
  const type = String(reply.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const encoding = String(reply.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const clean = reply.status === 200 && type === ADVERTISEMENT_TYPE && encoding === 'identity';
  return { url: baseOf(reply.url), target: reply.target, listing: clean ? parseAdvertisement(reply.body) : undefined };
}

/** forgesync can make this request as git would: no proxy to go through, no TLS setting that Node and git read differently. */
function inProcess(url: URL): boolean {
  return !proxyConfigured() && !(url.protocol === 'https:' && envHas(TLS_ENV));
}

const ZERO_ID = /^0+$/;

/**
 * Parses a v0 advertisement: `# service=git-upload-pack`, flush, then
 * `<id> <ref>` lines (capabilities after a NUL on the first; an empty
 * repository sends no line, or one `capabilities^{}` line), flush.
 * Undefined for anything else (protocol v2, an `ERR` line, a malformed packet).
 */
function parseAdvertisement(body: Buffer): RemoteListing | undefined {
  const packets: Array<string | null> = []; // null: flush-pkt
  for (let pos = 0; pos < body.length; ) {
    const hex = body.toString('latin1', pos, pos + 4);
    if (!/^[0-9a-f]{4}$/.test(hex)) return undefined;
    const length = Number.parseInt(hex, 16);
    if (length === 0) {
      packets.push(null);
      pos += 4;
      continue;
    }
    if (length < 5 || pos + length > body.length) return undefined; // delim/response-end (v2) or truncated
    packets.push(body.toString('utf8', pos + 4, pos + length).replace(/\n$/, ''));
    pos += length;
  }
  if (packets[0] !== '# service=git-upload-pack' || packets[1] !== null || packets.length < 3 || packets.at(-1) !== null) return undefined;
  const lines = packets.slice(2, -1);
  const refs: RefMap = new Map();
  let head: string | undefined;
  for (const [index, packet] of lines.entries()) {
    if (packet === null) return undefined;
    const nul = packet.indexOf('\0');
    if (nul !== -1 && index > 0) return undefined;
    const line = nul === -1 ? packet : packet.slice(0, nul);
    const space = line.indexOf(' ');
    const id = line.slice(0, space);
    const name = line.slice(space + 1);
    if (space === -1 || !OBJECT_ID.test(id) || name === '' || /[\s\0]/.test(name)) return undefined;
    if (nul !== -1) {
      for (const capability of packet.slice(nul + 1).split(' ')) {
        if (capability.startsWith('symref=HEAD:')) head = capability.slice('symref=HEAD:'.length) || undefined;
      }
    }
    if (name === 'capabilities^{}') {
      if (index > 0 || lines.length > 1 || !ZERO_ID.test(id)) return undefined;
      continue;
    }
    // What the ls-remote parser keeps: no HEAD, no peeled `^{}` entries.
    if (name !== 'HEAD' && !name.endsWith('^{}')) refs.set(name, id);
  }
  return { refs, head };
}
