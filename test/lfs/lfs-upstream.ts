import { createHash, randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GitHttpServer } from '../support/git-http-server.js';

/** One request a listener saw. */
export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An object the upstream LFS server holds. */
export interface TestObject {
  oid: string;
  size: number;
  content: Buffer;
}

/** Random content of `size` bytes, as an LFS object. */
export function testObject(size: number): TestObject {
  const content = randomBytes(size);
  return { oid: createHash('sha256').update(content).digest('hex'), size, content };
}

/**
 * A forge's Git and LFS servers, as GitHub has them, on 127.0.0.1:
 * - the **forge** listener serves git's smart HTTP (requests passed to a
 *   real `git http-backend`, token required) and the LFS batch API at
 *   `<repo>.git/info/lfs/objects/batch` (HTTP Basic `x-access-token:<token>`
 *   required), answering with `href`s on the storage listener;
 * - the **storage** listener (another origin, as GitHub's object storage)
 *   serves object bytes only to requests carrying the header the batch
 *   answer gave (`X-Storage-Grant`), never asks for the credential.
 * Both record every request. `hrefFor` changes where an object is said to
 * be (a hostile server: a private address).
 */
export class LfsUpstream {
  readonly forgeRequests: SeenRequest[] = [];
  readonly storageRequests: SeenRequest[] = [];
  readonly objects = new Map<string, TestObject>();
  readonly grant = randomBytes(12).toString('hex');
  /** Where the batch answer says object `oid` is (default: the storage listener). */
  hrefFor: (oid: string) => string = (oid) => `${this.storageUrl}/objects/${oid}`;

  private constructor(
    private readonly git: GitHttpServer,
    private readonly forge: Server,
    private readonly storage: Server,
    readonly token: string,
  ) {}

  static async start(root: string, token: string): Promise<LfsUpstream> {
    const git = await GitHttpServer.start({ root, token });
    let upstream: LfsUpstream | undefined;
    const forge = createServer((req, res) => void upstream?.onForge(req, res));
    const storage = createServer((req, res) => void upstream?.onStorage(req, res));
    await Promise.all([forge, storage].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    upstream = new LfsUpstream(git, forge, storage, token);
    return upstream;
  }

  get forgeUrl(): string {
    return `http://127.0.0.1:${(this.forge.address() as AddressInfo).port}`;
  }

  get storageUrl(): string {
    return `http://127.0.0.1:${(this.storage.address() as AddressInfo).port}`;
  }

  /** The oids asked for in batch requests so far, in order. */
  batchOids(): string[] {
    return this.forgeRequests.filter((seen) => seen.path.endsWith('/info/lfs/objects/batch')).flatMap((seen) => (JSON.parse(seen.body) as { objects: { oid: string }[] }).objects.map((object) => object.oid));
  }

  async close(): Promise<void> {
    for (const server of [this.forge, this.storage]) server.closeAllConnections();
    await Promise.all([this.forge, this.storage].map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    await this.git.close();
  }

  /** Where `/hop/<oid>` on the forge redirects to (a download href that moves on); default: the storage, with the grant in the query. */
  redirectFor: (oid: string) => string = (oid) => `${this.storageUrl}/objects/${oid}?grant=${this.grant}`;

  private async onForge(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.url?.startsWith('/hop/')) {
      const seen = await record(req, this.forgeRequests);
      return void res.writeHead(302, { location: this.redirectFor(seen.path.slice('/hop/'.length)) }).end();
    }
    if (req.url?.startsWith('/moved/')) {
      // A batch endpoint that moved to another origin (which the credential is not bound to).
      await record(req, this.forgeRequests);
      return void res.writeHead(307, { location: `${this.storageUrl}${req.url}` }).end();
    }
    if (!req.url?.includes('/info/lfs/')) return this.passToGit(req, res);
    const seen = await record(req, this.forgeRequests);
    if (req.headers.authorization !== `Basic ${Buffer.from(`x-access-token:${this.token}`).toString('base64')}`) {
      res.writeHead(401, { 'content-type': 'application/vnd.git-lfs+json', 'lfs-authenticate': 'Basic realm="test"' }).end('{"message":"Credentials needed"}');
      return;
    }
    if (req.method !== 'POST' || !seen.path.endsWith('/objects/batch')) return void res.writeHead(404).end();
    const asked = (JSON.parse(seen.body) as { objects: { oid: string; size: number }[] }).objects;
    const objects = asked.map(({ oid, size }) =>
      this.objects.has(oid)
        ? { oid, size, actions: { download: { href: this.hrefFor(oid), header: { 'X-Storage-Grant': this.grant }, expires_in: 600 } } }
        : { oid, size, error: { code: 404, message: 'Object does not exist' } },
    );
    res.writeHead(200, { 'content-type': 'application/vnd.git-lfs+json' }).end(JSON.stringify({ transfer: 'basic', objects }));
  }

  private async onStorage(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const seen = await record(req, this.storageRequests);
    const object = this.objects.get(seen.path.split('/').pop() ?? '');
    const granted = req.headers['x-storage-grant'] === this.grant || new URL(req.url ?? '/', 'http://x').searchParams.get('grant') === this.grant;
    if (!granted) return void res.writeHead(403).end('no grant');
    if (!object) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': object.size }).end(object.content);
  }

  /** Git's requests go to the real git http-backend, as they came. */
  private passToGit(req: IncomingMessage, res: ServerResponse): void {
    const upstreamRequest = httpRequest({ host: '127.0.0.1', port: this.git.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstreamRequest.on('error', () => res.destroy());
    req.pipe(upstreamRequest);
  }
}

async function record(req: IncomingMessage, into: SeenRequest[]): Promise<SeenRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const seen = { method: req.method ?? 'GET', path: new URL(req.url ?? '/', 'http://x').pathname, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
  into.push(seen);
  return seen;
}
