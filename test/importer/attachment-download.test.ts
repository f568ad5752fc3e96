import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileHosts } from '../../src/importer/attachments/scan.js';
import { urlKey } from '../../src/importer/attachments/url-key.js';
import { objectWork, type ObjectOutcome, type ObjectWorkContext } from '../../src/importer/stages/object-work.js';
import { addFilesStep } from '../../src/importer/store/attachments.js';
import { loopbackEgress } from '../support/egress.js';
import { credentialNames, startImportHarness, type ImportHarness } from './harness.js';

/*
 * An attachment download (the per-object job `file:<key>`) against a file
 * host of the test's own: the bytes go to disk as they arrive (never held
 * whole: several 25 MiB downloads run at once), a claim past the cap is
 * refused before the body is read, nothing is left behind by a download
 * that did not finish, and any name the URL has is stored.
 */

const MiB = 2 ** 20;
const HALF = Buffer.alloc(2 * MiB, 7);
const TAIL = Buffer.alloc(2 * MiB, 9);

let h: ImportHarness;
let server: Server;
let origin: string;
let filesDir: string;
let ctx: ObjectWorkContext;
let sendTail: () => void = () => undefined;
const tailSent = new Promise<void>((resolve) => (sendTail = resolve));
let hugeClosed = false;

beforeAll(async () => {
  server = createServer((req, res: ServerResponse) => {
    if (req.url === '/o/r/files/1/big.bin') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(HALF.length + TAIL.length) });
      res.write(HALF);
      void tailSent.then(() => res.end(TAIL));
      return;
    }
    if (req.url === '/o/r/files/2/report%E0%A4%A.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end('hello');
    }
    if (req.url === '/o/r/files/3/huge.bin') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(100 * MiB) });
      res.flushHeaders();
      res.on('close', () => (hugeClosed = true));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  h = await startImportHarness();
  const record = await h.app.importer.create({ project: h.project, apiUrl: h.fake.apiUrl, credentials: credentialNames(1) });
  filesDir = mkdtempSync(join(tmpdir(), 'forgesync-files-'));
  ctx = {
    db: h.app.kernel.database.db,
    importId: record.id,
    importName: record.name,
    run: record.run,
    mode: 'full',
    apiUrl: `${origin}/api/v3`,
    repoPath: '/repos/o/r',
    hosts: new FileHosts(`${origin}/api/v3`),
    client: undefined as never,
    policy: loopbackEgress(),
    tokens: [],
    filesDir,
    maxFileBytes: 25 * MiB,
    signal: new AbortController().signal,
  };
});
afterAll(async () => {
  sendTail();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await h?.close();
});

/** Records `url` as a file to download and runs its job; the outcome's statements are then run too. */
async function download(url: string, during?: () => Promise<void>): Promise<ObjectOutcome> {
  const db = h.app.kernel.database.db;
  await db.executeQuery(addFilesStep(db, ctx.importId, ctx.run, [{ url, kind: 'attachment', allowed: true }], Date.now())!.compile());
  const work = objectWork(ctx, `file:${urlKey(url)}`);
  await during?.();
  const outcome = await work;
  for (const step of outcome.steps ?? []) if (step) await db.executeQuery(step.compile());
  return outcome;
}

/** The largest file in the files directory, in bytes. */
const largestOnDisk = () => Math.max(0, ...readdirSync(filesDir).map((name) => statSync(join(filesDir, name)).size));

describe('an attachment download', () => {
  it('writes the bytes to disk as they arrive, then names the file by its SHA-256', async () => {
    let seenOnDisk = 0;
    const outcome = await download(`${origin}/o/r/files/1/big.bin`, async () => {
      // The first half has come; the rest waits for the test. Streamed, it is on disk already; buffered, nothing is.
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && seenOnDisk < HALF.length) {
        seenOnDisk = largestOnDisk();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      sendTail();
    });
    expect('failure' in outcome ? outcome.failure : undefined).toBeUndefined();
    expect(seenOnDisk).toBeGreaterThanOrEqual(HALF.length);
    const sha256 = createHash('sha256').update(HALF).update(TAIL).digest('hex');
    expect(readdirSync(filesDir)).toEqual([sha256]);
    expect(readFileSync(join(filesDir, sha256)).length).toBe(HALF.length + TAIL.length);
  }, 30_000);

  it('stores a file whose URL has an escape that is not UTF-8, under the name as written', async () => {
    const url = `${origin}/o/r/files/2/report%E0%A4%A.txt`;
    const outcome = await download(url);
    expect('failure' in outcome ? outcome.failure : undefined).toBeUndefined();
    const row = await h.app.kernel.database.db.selectFrom('import_attachments').select(['state', 'filename', 'content_type', 'size']).where('url_key', '=', urlKey(url)).executeTakeFirstOrThrow();
    expect(row).toEqual({ state: 'done', filename: 'report%E0%A4%A.txt', content_type: 'text/plain', size: 5 });
  });

  it('refuses a file that says it is past the cap before reading it, and leaves nothing behind', async () => {
    const before = readdirSync(filesDir);
    const outcome = await download(`${origin}/o/r/files/3/huge.bin`);
    expect('failure' in outcome && outcome.failure?.error).toBe(`larger than the ${25 * MiB}-byte cap: left as a link`);
    expect(readdirSync(filesDir)).toEqual(before);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hugeClosed).toBe(true);
  });
});
