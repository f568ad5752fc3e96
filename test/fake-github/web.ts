/**
 * The fake GitHub's web host: git smart-HTTP (proxied to the project's
 * GitHttpServer, which runs `git http-backend`), attachments
 * (`/user-attachments/assets/<uuid>`, `/<owner>/<repo>/files/<id>/<name>`, one
 * answering 302 to a storage path on the same host), release downloads
 * (`/<owner>/<repo>/releases/download/<tag>/<name>` → 302 → bytes; 404 for a
 * draft's, as on GitHub), the signed storage URLs the API's asset endpoint
 * redirects to, and avatars.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Payloads } from './payloads.js';
import type { AssetRecord, AttachmentRecord, FakeProject, ReleaseRecord } from './project.js';

export interface WebOptions {
  project: FakeProject;
  payloads: Payloads;
  /** Port of the GitHttpServer serving the bare repositories, or undefined (git disabled). */
  gitPort: () => number | undefined;
  /** Accepted tokens (Basic `x-access-token:<token>`); an unknown one answers 401. */
  tokens: readonly string[];
  /** When true, git requests without credentials answer 401 (a private repository). */
  requireGitAuth: boolean;
}

const GIT_PATH = /^\/([^/]+)\/([^/]+?)(\.wiki)?(?:\.git)?(\/(?:info\/refs|git-upload-pack|git-receive-pack|HEAD|objects\/.*))$/;

/** Which kind of web path this is (for the request log), before answering it. */
export function classifyWeb(path: string): string {
  if (GIT_PATH.test(path)) return 'git';
  if (path.startsWith('/user-attachments/') || /^\/[^/]+\/[^/]+\/files\//.test(path) || path.startsWith('/_storage/user-attachments/') || path.startsWith('/_storage/files/')) return 'attachment';
  if (/^\/[^/]+\/[^/]+\/releases\/download\//.test(path) || path.startsWith('/_storage/releases/')) return 'asset';
  if (path.startsWith('/avatars/')) return 'avatar';
  return 'web';
}

/** `path` with its escapes decoded, or as it is when they are not UTF-8 (a hostile project's link may have such a name). */
function decodedPath(path: string): string {
  try {
    return decodeURI(path);
  } catch {
    return path;
  }
}

function sendBytes(res: ServerResponse, status: number, contentType: string, bytes: Buffer, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': String(bytes.length), 'cache-control': 'max-age=300', etag: `"${bytes.length.toString(16)}-${bytes.subarray(0, 8).toString('hex')}"`, ...extra });
  res.end(bytes);
}

function sendText(res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...extra });
  res.end(text);
}

export class WebHost {
  constructor(private readonly options: WebOptions) {}

  private attachment(path: string): { record: AttachmentRecord; redirect: boolean } | undefined {
    const direct = this.options.project.attachments.get(path);
    if (direct) return { record: direct, redirect: direct.redirectTo !== null };
    for (const record of this.options.project.attachments.values()) if (record.redirectTo === path) return { record, redirect: false };
    return undefined;
  }

  private asset(test: (release: ReleaseRecord, asset: AssetRecord) => boolean): { release: ReleaseRecord; asset: AssetRecord } | undefined {
    for (const release of this.options.project.releases) for (const asset of release.assets) if (test(release, asset)) return { release, asset };
    return undefined;
  }

  /** Answers one web request; resolves once the answer is sent. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname;
    const { project, payloads } = this.options;
    const git = GIT_PATH.exec(path);
    if (git) return this.git(req, res, url, git);
    req.resume();
    const found = this.attachment(decodedPath(path));
    if (found) {
      const { record } = found;
      if (found.redirect) return sendText(res, 302, `<html><body>You are being <a href="${record.redirectTo}">redirected</a>.</body></html>`, { location: `${payloads.hosts.webUrl}${record.redirectTo}` });
      const bytes = payloads.bytes(`attachment:${record.path}`, record.contentType, record.size);
      return sendBytes(res, 200, record.contentType, bytes, { 'content-disposition': `inline; filename="${record.name}"` });
    }
    const download = /^\/([^/]+)\/([^/]+)\/releases\/download\/([^/]+)\/([^/]+)$/.exec(path);
    if (download && download[1] === project.repo.owner && download[2] === project.repo.name) {
      const tag = decodeURIComponent(download[3] as string);
      const name = decodeURIComponent(download[4] as string);
      // A draft's assets are not on the web: only the API's asset endpoint reads them.
      const hit = this.asset((r, a) => !r.draft && r.tag === tag && a.name === name);
      if (hit) return sendText(res, 302, '', { location: `${payloads.hosts.webUrl}/_storage/releases/${hit.asset.id}/${encodeURIComponent(hit.asset.name)}` });
    }
    const stored = /^\/_storage\/releases\/(\d+)\/[^/]+$/.exec(path);
    if (stored) {
      const hit = this.asset((_r, a) => a.id === Number(stored[1]));
      const signature = url.searchParams.get('X-Amz-Signature');
      if (hit && signature !== null) {
        // A signed URL (from the API's asset endpoint) carries its own authorization: like S3, one more is refused, a wrong signature too.
        if (req.headers.authorization !== undefined) return sendText(res, 400, '<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified</Message></Error>', { 'content-type': 'application/xml' });
        if (signature !== payloads.assetSignature(hit.asset)) return sendText(res, 403, '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code></Error>', { 'content-type': 'application/xml' });
      } else if (hit?.release.draft) {
        return sendText(res, 404, '<html><body><h1>404 Not Found</h1></body></html>');
      }
      if (hit) {
        hit.asset.downloadCount++;
        return sendBytes(res, 200, hit.asset.contentType, payloads.assetBytes(hit.asset), { 'content-disposition': `attachment; filename=${hit.asset.name}` });
      }
    }
    const avatar = /^\/avatars\/u\/(\d+)$/.exec(path);
    if (avatar) return sendBytes(res, 200, 'image/png', payloads.bytes(`avatar:${avatar[1]}`, 'image/png', 200));
    return sendText(res, 404, '<html><body><h1>404 Not Found</h1></body></html>');
  }

  private git(req: IncomingMessage, res: ServerResponse, url: URL, match: RegExpExecArray): void {
    const { project, tokens, requireGitAuth } = this.options;
    const [, owner, name, wiki, rest] = match;
    if (owner !== project.repo.owner || name !== project.repo.name || (wiki && !project.repo.hasWiki)) {
      req.resume();
      return sendText(res, 404, 'Repository not found.\n', { 'content-type': 'text/plain' });
    }
    const authorization = req.headers.authorization;
    let authorized = false;
    if (authorization?.startsWith('Basic ')) {
      const decoded = Buffer.from(authorization.slice(6), 'base64').toString('utf8');
      const token = decoded.slice(decoded.indexOf(':') + 1);
      if (!tokens.includes(token)) {
        req.resume();
        return sendText(res, 401, 'Invalid username or token. Password authentication is not supported for Git operations.\n', { 'content-type': 'text/plain', 'www-authenticate': 'Basic realm="GitHub"' });
      }
      authorized = true;
    }
    if ((requireGitAuth && !authorized) || rest === '/git-receive-pack' || url.searchParams.get('service') === 'git-receive-pack') {
      req.resume();
      if (!authorized) return sendText(res, 401, 'Authentication required.\n', { 'content-type': 'text/plain', 'www-authenticate': 'Basic realm="GitHub"' });
      return sendText(res, 403, 'Permission denied (the fake GitHub is read-only over git).\n', { 'content-type': 'text/plain' });
    }
    const port = this.options.gitPort();
    if (port === undefined) {
      req.resume();
      return sendText(res, 404, 'Repository not found.\n', { 'content-type': 'text/plain' });
    }
    const target = `/${owner}/${name}${wiki ?? ''}.git${rest}${url.search}`;
    const headers = { ...req.headers };
    delete headers.authorization;
    delete headers.host;
    const upstream = httpRequest({ host: '127.0.0.1', port, method: req.method, path: target, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) sendText(res, 502, 'git backend unavailable\n');
      else res.destroy();
    });
    req.pipe(upstream);
  }
}
