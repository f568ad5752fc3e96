/**
 * The fake GitHub's hostile mode (FakeGitHubOptions.hostile): an API host
 * that means harm, for the tests that forgesync survives one. Each option
 * turns on one behaviour; they combine.
 */
import type { ServerResponse } from 'node:http';
import type { FakeProject } from './project.js';

export interface HostileOptions {
  // A huge claimed last page is FakeGitHubOptions.claimLastPage.
  /** Pages 2 and later of every list answer a JSON array of this many bytes (small objects: many times larger once parsed) instead of the page. */
  largePageBytes?: number;
  /** The large pages are sent chunked, without a content-length (default: with one, which a client can refuse before reading). */
  largePageChunked?: boolean;
  /** API answers whose `path?query` this matches trickle out a byte every `everyMs` ms; `endless`: whitespace, forever, before the body. */
  drip?: { match: string | RegExp; everyMs: number; endless?: boolean };
  /** API requests whose `path?query` this matches answer 302 to `to` (say, an address the egress policy refuses). */
  redirect?: { match: string | RegExp; to: string };
  /** Attachments on the web host whose path this matches answer 302 to `to` (say, a private address) instead of their bytes. */
  fileRedirect?: { match: string | RegExp; to: string };
}

/** Whether a hostile option's `match` selects `target` (`path?query`). */
export function hostileMatch(match: string | RegExp, target: string): boolean {
  return typeof match === 'string' ? target.includes(match) : match.test(target);
}

const BLOCK_OBJECTS = 16_384;
/** 16,384 small objects, `{"id":1,"x":[0]},` each: a JSON array's body, about 300 KiB. */
const BLOCK = Buffer.from(Array.from({ length: BLOCK_OBJECTS }, (_, index) => `{"id":${index + 1},"x":[0]},`).join(''));

/** Writes `chunk` unless the client is gone; waits for the socket to drain when it asks to. */
async function write(res: ServerResponse, chunk: Buffer | string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return false;
  if (res.write(chunk)) return true;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
  return !res.destroyed;
}

/**
 * Answers 200 with a valid JSON array of `bytes` bytes (give or take a
 * block), written as the client reads it, until it is all sent or the
 * client hangs up.
 */
export async function sendLargePage(res: ServerResponse, headers: Record<string, string>, bytes: number, chunked: boolean): Promise<void> {
  const blocks = Math.max(1, Math.ceil((bytes - 3) / BLOCK.length));
  const total = 1 + blocks * BLOCK.length + 2;
  res.writeHead(200, { ...headers, 'content-type': 'application/json; charset=utf-8', ...(chunked ? {} : { 'content-length': String(total) }) });
  if (!(await write(res, '['))) return;
  for (let block = 0; block < blocks; block++) if (!(await write(res, BLOCK))) return;
  res.end('0]');
}

/** Answers `text` a byte every `everyMs` ms; `endless`: spaces before it, for as long as the client listens. */
export async function drip(res: ServerResponse, status: number, headers: Record<string, string>, text: string, options: { everyMs: number; endless?: boolean }): Promise<void> {
  const body = Buffer.from(text);
  res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8', ...(options.endless ? {} : { 'content-length': String(body.length) }) });
  for (let index = 0; options.endless || index < body.length; index++) {
    await new Promise((resolve) => setTimeout(resolve, options.everyMs));
    if (!(await write(res, options.endless ? ' ' : body.subarray(index, index + 1)))) return;
  }
  res.end();
}

/** The path of the attachment withHostileLinks adds, named with an escape that is not UTF-8. */
export const BAD_ESCAPE_PATH = '/user-attachments/files/7/report%E0%A4%A.txt';

/**
 * Adds to issue 1's body links a hostile author could write: an upload-like
 * path on the foreign host, the cloud metadata address, a private address,
 * a loopback address on another port, and an attachment of the project's
 * own (served) whose name has a malformed percent-escape.
 */
export function withHostileLinks(project: FakeProject): FakeProject {
  const issue = project.issues.find((candidate) => candidate.number === 1);
  if (!issue) throw new Error('the project has no issue 1');
  const badEscape = project.addAttachment({ path: BAD_ESCAPE_PATH, name: 'report.txt', contentType: 'text/plain', size: 120, redirectTo: null });
  issue.body = [
    issue.body ?? '',
    '![upload elsewhere]({{foreign}}/user-attachments/assets/0f0e0d0c-0b0a-4009-8807-060504030201)',
    '![metadata](http://169.254.169.254/latest/meta-data/iam/credentials.png)',
    '![private](http://10.0.0.7/user-attachments/assets/secret.png)',
    '![loopback](http://127.0.0.2:9/user-attachments/assets/local.png)',
    `[report](${badEscape})`,
  ].join('\n\n');
  return project;
}
