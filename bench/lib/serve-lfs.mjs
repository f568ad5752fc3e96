// Git LFS in bench/serve.mjs: the upstream LFS server forgesync replicates
// from (batch API + storage, in this process), the upstream repository whose
// pointers reference the objects, the plain Node file server that is the
// baseline, and the downloader both are measured with.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitRaw } from './snapshots-measure.mjs';

const LFS_JSON = 'application/vnd.git-lfs+json';

/** `count` objects of `bytes` random bytes each (incompressible, as media files are): { oid, size, content }. */
export function makeObjects(count, bytes) {
  return Array.from({ length: count }, () => {
    const content = randomBytes(bytes);
    return { oid: createHash('sha256').update(content).digest('hex'), size: bytes, content };
  });
}

/**
 * The upstream's LFS server on 127.0.0.1: `POST <repo>.git/info/lfs/objects/batch`
 * answers downloads with hrefs at `/storage/<oid>` on itself; no credential
 * (forgesync's source has none). Resolves with { url, close }.
 */
export async function startLfsUpstream(objects) {
  const byOid = new Map(objects.map((o) => [o.oid, o]));
  let origin;
  const server = createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET' && path.startsWith('/storage/')) {
      const object = byOid.get(path.slice('/storage/'.length));
      if (!object) return void res.writeHead(404).end();
      return void res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': object.size }).end(object.content);
    }
    if (req.method !== 'POST' || !path.endsWith('/info/lfs/objects/batch')) return void res.writeHead(404).end();
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const asked = JSON.parse(Buffer.concat(chunks).toString('utf8')).objects;
    const answers = asked.map(({ oid, size }) =>
      byOid.has(oid)
        ? { oid, size, actions: { download: { href: `${origin}/storage/${oid}`, expires_in: 3600 } } }
        : { oid, size, error: { code: 404, message: 'Object does not exist' } },
    );
    res.writeHead(200, { 'content-type': LFS_JSON }).end(JSON.stringify({ transfer: 'basic', objects: answers }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
  return {
    url: origin,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The pointer file git-lfs commits for `object`. */
const pointer = (object) => `version https://git-lfs.github.com/spec/v1\noid sha256:${object.oid}\nsize ${object.size}\n`;

/**
 * A bare upstream `<root>/<name>.git` (a local path: forgesync reaches its LFS
 * server through the committed `.lfsconfig`'s `lfs.url`) with `.gitattributes`
 * and one pointer per object under media/.
 */
export async function createLfsRepository(root, name, objects, lfsUrl) {
  const work = join(root, `${name}-work`);
  mkdirSync(join(work, 'media'), { recursive: true });
  await gitRaw(['init', '--quiet', '--initial-branch=main', work]);
  writeFileSync(join(work, '.gitattributes'), '*.bin filter=lfs diff=lfs merge=lfs -text\n');
  writeFileSync(join(work, '.lfsconfig'), `[lfs]\n\turl = ${lfsUrl}\n`);
  objects.forEach((object, i) => writeFileSync(join(work, 'media', `file-${i}.bin`), pointer(object)));
  await gitRaw(['-C', work, 'add', '-A']);
  const who = ['-c', 'user.name=bench', '-c', 'user.email=bench@example.com'];
  await gitRaw(['-C', work, ...who, 'commit', '--quiet', '-m', 'media']);
  const bare = join(root, `${name}.git`);
  await gitRaw(['clone', '--bare', '--quiet', work, bare]);
  return bare;
}

/**
 * The baseline: a plain Node file server streaming `<objectsDir>/<oid[0:2]>/<oid[2:4]>/<oid>`
 * (forgesync's own files, so both read the same page cache) at `GET /<oid>`,
 * with Content-Length, nothing else. Resolves with { url, close }.
 */
export async function startFileServer(objectsDir) {
  const server = createServer((req, res) => {
    const oid = (req.url ?? '').slice(1);
    if (!/^[0-9a-f]{64}$/.test(oid)) return void res.writeHead(404).end();
    const path = join(objectsDir, oid.slice(0, 2), oid.slice(2, 4), oid);
    let size;
    try {
      size = statSync(path).size;
    } catch {
      return void res.writeHead(404).end();
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
    createReadStream(path).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The file server as a child process of its own (as forgesync is): resolves with { child, url }. */
export function startFileServerProcess(objectsDir) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), 'file-server', objectsDir], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buffer = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      buffer += chunk;
      const newline = buffer.indexOf('\n');
      if (newline !== -1) resolve({ child, url: JSON.parse(buffer.slice(0, newline)).url });
    });
    child.once('exit', (code) => reject(new Error(`the file server exited with ${code}`)));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === 'file-server') {
  const { url } = await startFileServer(process.argv[3]);
  process.stdout.write(`${JSON.stringify({ url })}\n`);
}

/** One GET, the body counted (and hashed when `verify`); rejects on a status other than 200 or a short body. */
function download(href, { headers = {}, size, oid, verify }) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(href, { headers }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`GET ${href}: HTTP ${res.statusCode}`));
      }
      const hash = verify ? createHash('sha256') : undefined;
      let bytes = 0;
      res.on('data', (chunk) => {
        bytes += chunk.length;
        hash?.update(chunk);
      });
      res.on('end', () => {
        if (bytes !== size) return reject(new Error(`GET ${href}: ${bytes} bytes, expected ${size}`));
        if (hash && hash.digest('hex') !== oid) return reject(new Error(`GET ${href}: content does not hash to its oid`));
        resolve(bytes);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Downloads `items` ({ href, headers, size, oid }) `concurrency` at a time (git-lfs's lfs.concurrenttransfers is 8); resolves with the bytes. */
export async function downloadAll(items, { concurrency, verify }) {
  let next = 0;
  let bytes = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      const received = await download(item.href, { ...item, verify });
      bytes += received;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return bytes;
}

/**
 * What git-lfs does against forgesync: one batch request (download) for
 * `objects`, then the hrefs with the headers it gave. Resolves with the items
 * to download.
 */
export async function batchDownloads(repoUrl, objects, authorization) {
  const body = JSON.stringify({ operation: 'download', transfers: ['basic'], objects: objects.map(({ oid, size }) => ({ oid, size })) });
  const answer = await new Promise((resolve, reject) => {
    const req = httpRequest(`${repoUrl}/info/lfs/objects/batch`, { method: 'POST', headers: { 'content-type': LFS_JSON, accept: LFS_JSON, authorization } }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) reject(new Error(`LFS batch: HTTP ${res.statusCode}: ${text}`));
        else resolve(JSON.parse(text));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
  return answer.objects.map((o) => {
    if (!o.actions?.download) throw new Error(`LFS batch: no download for ${o.oid}: ${JSON.stringify(o.error)}`);
    return { href: o.actions.download.href, headers: o.actions.download.header ?? {}, size: o.size, oid: o.oid };
  });
}
