import type { BoundToken } from '../credentials/store.js';
import { downloadByContent } from '../egress/download.js';
import { CredentialRedirectError } from '../egress/errors.js';
import { pinnedRequest } from '../egress/http.js';
import type { EgressPolicy } from '../egress/policy.js';
import { authorizationValue } from '../git/env.js';
import { redactUrl } from '../util/redact.js';
import { LfsBatchError } from './errors.js';
import type { ObjectFiles } from './files.js';
import { isOid, type LfsPointer } from './pointer.js';

/**
 * The client side of the LFS batch API (download only), against a
 * source's upstream LFS server. Every connection goes through the egress
 * policy (resolved once, checked, pinned) and every redirect is checked
 * hop by hop. The source's credential goes only where it is bound
 * (`allows`, the one test of every URL a token may reach): to the batch
 * endpoint when it is, and to an object's `href` only when the batch
 * answer gave that href no `Authorization` of its own and the credential
 * is bound to it. The headers the answer gives an `href` (GitHub's signed
 * storage URLs carry their own) are sent to that href's origin only.
 */
export interface UpstreamLfs {
  /** The batch API's base (`…/info/lfs`). */
  endpoint: URL;
  policy: EgressPolicy;
  credential: BoundToken | undefined;
  timeoutMs: number;
  signal: AbortSignal;
}

/** How the upstream answered for one object: where to download it, or why not. */
export type BatchAnswer = { href: URL; headers: Record<string, string> } | { error: { code: number; message: string } };

const LFS_JSON = 'application/vnd.git-lfs+json';
/** Largest batch answer read (a hundred objects' actions fit in far less). */
const MAX_BATCH_ANSWER = 8 * 1024 * 1024;
/** Redirects of a batch request followed at most (307/308 only: they keep the POST). */
const MAX_BATCH_REDIRECTS = 5;

/**
 * Asks the batch API how to download `objects` (100 at most). Returns an
 * answer per oid the server mentioned (an object it left out has none).
 * @throws LfsBatchError; CredentialRedirectError; the egress errors.
 */
export async function requestBatch(upstream: UpstreamLfs, objects: readonly LfsPointer[]): Promise<Map<string, BatchAnswer>> {
  const body = JSON.stringify({ operation: 'download', transfers: ['basic'], objects: objects.map(({ oid, size }) => ({ oid, size })), hash_algo: 'sha256' });
  let url = new URL(`${upstream.endpoint.href.replace(/\/+$/, '')}/objects/batch`);
  const shown = redactUrl(url.href);
  for (let hop = 0; ; hop++) {
    const response = await pinnedRequest(url, {
      policy: upstream.policy,
      method: 'POST',
      headers: { accept: LFS_JSON, 'content-type': LFS_JSON, ...credentialFor(upstream.credential, url) },
      body,
      signal: upstream.signal,
      timeoutMs: upstream.timeoutMs,
      maxBytes: MAX_BATCH_ANSWER,
    });
    const location = response.headers.location;
    if ((response.status === 307 || response.status === 308) && location && hop < MAX_BATCH_REDIRECTS) {
      const next = new URL(location, url);
      // Before anything is sent there: the credential never follows a redirect to a host it is not bound to.
      if (upstream.credential && next.origin !== url.origin && !upstream.credential.allows(next)) throw new CredentialRedirectError(url.origin, next.origin);
      url = next;
      continue;
    }
    if (response.status !== 200) throw new LfsBatchError(shown, `answered HTTP ${response.status}${batchMessage(response.body)}`, response.status);
    return parseBatchAnswer(response.body, shown);
  }
}

/** What storing one object ended with. */
export type DownloadOutcome = { stored: true } | { stored: false; error: string };

/**
 * Downloads one object from where the batch answer said, into `files`:
 * streamed, cut off past the pointer's size, stored only if its SHA-256 and
 * size are the pointer's (downloadByContent verifies before the rename).
 * @throws the egress errors (refused address, too large, network, timeout).
 */
export async function downloadObject(upstream: UpstreamLfs, pointer: LfsPointer, action: { href: URL; headers: Record<string, string> }, files: ObjectFiles): Promise<DownloadOutcome> {
  const { href } = action;
  const ownAuthorization = Object.keys(action.headers).some((name) => name.toLowerCase() === 'authorization');
  const result = await downloadByContent(href, {
    policy: upstream.policy,
    signal: upstream.signal,
    timeoutMs: upstream.timeoutMs,
    maxBytes: pointer.size,
    follow: (next) => next.protocol === 'https:' || next.protocol === 'http:',
    headers: (hop) => ({
      ...(hop.origin === href.origin ? action.headers : {}),
      ...(ownAuthorization ? {} : credentialFor(upstream.credential, hop)),
    }),
    filesDir: files.dirOf(pointer.oid),
    temporaryDir: files.temporaryDir,
    expected: { sha256: pointer.oid, size: pointer.size },
  });
  if (result.stored) return { stored: true };
  if ('mismatch' in result) return { stored: false, error: `the server sent ${result.mismatch.size} bytes hashing to ${result.mismatch.sha256}, not the object` };
  return { stored: false, error: `the download answered HTTP ${result.status}` };
}

/** The Authorization header of the source's credential for `url`, when it is bound there; none otherwise. */
function credentialFor(credential: BoundToken | undefined, url: URL): Record<string, string> {
  return credential && credential.allows(url) ? { authorization: authorizationValue(credential.token) } : {};
}

/** The server's own message in an error answer (`{ "message": … }`), short, for the error text. */
function batchMessage(body: Buffer): string {
  try {
    const message = (JSON.parse(body.toString('utf8')) as { message?: unknown }).message;
    return typeof message === 'string' ? `: ${message.replace(/[\r\n]+/g, ' ').slice(0, 200)}` : '';
  } catch {
    return '';
  }
}

/** The batch answer's objects, each checked: an oid of 64 hex digits, an http(s) href, headers of single-line strings. */
export function parseBatchAnswer(body: Buffer, shown: string): Map<string, BatchAnswer> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new LfsBatchError(shown, 'answered with something that is not JSON');
  }
  const objects = (parsed as { objects?: unknown })?.objects;
  if (!Array.isArray(objects)) throw new LfsBatchError(shown, 'answered without an objects list');
  const answers = new Map<string, BatchAnswer>();
  for (const object of objects as Record<string, unknown>[]) {
    if (!object || !isOid(object.oid)) continue;
    answers.set(object.oid, answerOf(object));
  }
  return answers;
}

function answerOf(object: Record<string, unknown>): BatchAnswer {
  const error = object.error as { code?: unknown; message?: unknown } | undefined;
  if (error && typeof error === 'object') return { error: { code: Number(error.code) || 0, message: String(error.message ?? '').slice(0, 200) } };
  const download = (object.actions as { download?: { href?: unknown; header?: unknown } } | undefined)?.download;
  let href: URL | undefined;
  try {
    href = typeof download?.href === 'string' ? new URL(download.href) : undefined;
  } catch {
    href = undefined;
  }
  if (!href || (href.protocol !== 'https:' && href.protocol !== 'http:')) return { error: { code: 0, message: 'the answer gave no usable download href' } };
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries((download?.header as Record<string, unknown> | undefined) ?? {})) {
    if (typeof value !== 'string' || !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name) || /[\r\n\0]/.test(value)) return { error: { code: 0, message: `the answer gave an unusable header ${JSON.stringify(name.slice(0, 40))}` } };
    headers[name] = value;
  }
  return { href, headers };
}
