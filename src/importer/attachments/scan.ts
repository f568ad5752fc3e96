import type { FoundFile } from '../store/attachments.js';

/** GitHub's hosts for uploaded files (what `user-attachments` links redirect to, and older image links). */
const GITHUB_FILE_HOSTS = ['user-images.githubusercontent.com', 'private-user-images.githubusercontent.com', 'objects.githubusercontent.com', 'github-production-user-asset-6210df.s3.amazonaws.com'];
/**
 * Where GitHub's API asset endpoint sends a release asset's bytes (a 302 to
 * a signed, short-lived URL, which carries its own authorization: no token
 * goes there). Only release asset downloads go to them, and only by that
 * redirect: a link to one in a body is not a file of the project.
 */
const RELEASE_ASSET_STORAGE_HOSTS = ['release-assets.githubusercontent.com', 'objects.githubusercontent.com', 'github-production-release-asset-2e65be.s3.amazonaws.com'];

/**
 * Where a project's files may be downloaded from: over https, the API's
 * host, GitHub's file hosts and the repository's web host; over plain http,
 * only when the import's own API URL is http (an operator's choice, allowed
 * by FORGESYNC_GIT_PROTOCOLS), and then only the origins of the API URL and
 * of the web URL that are themselves http. A comment's `http://<api host>/…`
 * link on an https project is left as a link: nothing, and no token, goes
 * over plain HTTP because someone wrote it.
 */
export class FileHosts {
  /** `host[:port]`s reached over https. */
  readonly #own: Set<string>;
  /** Origins reached over plain http. */
  readonly #plain = new Set<string>();
  readonly #plainAllowed: boolean;

  /** The API's host, GitHub's file hosts, and the web host of the repository's `htmlUrl` when it is known (else see {@link addWebUrl}). */
  constructor(apiUrl: string, htmlUrl?: unknown) {
    const api = new URL(apiUrl);
    this.#own = new Set([api.host, ...GITHUB_FILE_HOSTS]);
    this.#plainAllowed = api.protocol === 'http:';
    if (this.#plainAllowed) this.#plain.add(api.origin);
    if (typeof htmlUrl === 'string') this.addWebUrl(htmlUrl);
  }

  /** Adds the host of the repository's `html_url` (github.com, or a GitHub Enterprise server's web host). */
  addWebUrl(htmlUrl: string): void {
    let url: URL;
    try {
      url = new URL(htmlUrl);
    } catch {
      return; // Not a URL: no web host to trust.
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return;
    this.#own.add(url.host);
    if (this.#plainAllowed && url.protocol === 'http:') this.#plain.add(url.origin);
  }

  /** Whether a file at `url` may be downloaded (also asked of every redirect hop). */
  allows(url: URL): boolean {
    if (url.protocol === 'https:') return this.#own.has(url.host);
    return url.protocol === 'http:' && this.#plain.has(url.origin);
  }

  /** Whether a release asset's download may go to `url` (asked of every redirect hop): the hosts {@link allows} names, and GitHub's release asset storage over https. */
  allowsReleaseAsset(url: URL): boolean {
    return this.allows(url) || (url.protocol === 'https:' && RELEASE_ASSET_STORAGE_HOSTS.includes(url.host));
  }

  /** Whether `url` on one of the project's hosts is an uploaded file rather than a link to a page. */
  isFile(url: URL): boolean {
    if (GITHUB_FILE_HOSTS.includes(url.host)) return true;
    return /\/user-attachments\/(assets|files)\/|^\/[^/]+\/[^/]+\/(files|assets)\/|\/releases\/download\//.test(url.pathname);
  }
}

/**
 * The API endpoint of release asset `id` (`<api>/repos/{o}/{r}/releases/assets/{id}`),
 * which answers `Accept: application/octet-stream` with the bytes or a redirect
 * to them, for drafts too (a draft's `browser_download_url` answers 404);
 * undefined when `id` is not a positive whole number.
 */
export function releaseAssetEndpoint(apiUrl: string, repoPath: string, id: unknown): string | undefined {
  return typeof id === 'number' && Number.isSafeInteger(id) && id > 0 ? `${apiUrl}${repoPath}/releases/assets/${id}` : undefined;
}

// Markdown images and links, HTML img/a tags, and bare URLs (GitHub links those too): the URL in each.
const LINK = /!?\[[^\]]*\]\(\s*<?(https?:\/\/[^\s)>]+)>?(?:\s+"[^"]*")?\s*\)|<(?:img|a)\b[^>]*?\b(?:src|href)\s*=\s*["'](https?:\/\/[^"']+)["']|(?<![(<"'=\w])(https?:\/\/[^\s)<>"'\]]+)/gi;
/** Names of files people upload (a link to one on another host is reported as an attachment left behind). */
const FILE_NAME = /\.(png|jpe?g|gif|webp|svg|bmp|mp4|mov|webm|pdf|zip|gz|tgz|7z|txt|log|json|csv|docx?|xlsx?|pptx?)$/i;

/**
 * The files a Markdown body links to: uploaded files on the project's own
 * hosts (to download), and images or upload-like links on any other host
 * (left as links, and reported).
 */
export function filesIn(body: unknown, hosts: FileHosts): FoundFile[] {
  if (typeof body !== 'string' || body.length === 0 || !body.includes('http')) return [];
  const found: FoundFile[] = [];
  for (const match of body.matchAll(LINK)) {
    const text = (match[1] ?? match[2] ?? match[3]!).replace(/[.,;:!?]+$/, '');
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      continue;
    }
    const image = match[0].startsWith('!') || /^<img/i.test(match[0]);
    if (hosts.allows(url)) {
      if (hosts.isFile(url)) found.push({ url: url.toString(), kind: 'attachment', allowed: true });
    } else if (image || hosts.isFile(url) || FILE_NAME.test(url.pathname)) {
      found.push({ url: url.toString(), kind: 'attachment', allowed: false });
    }
  }
  return found;
}

/**
 * Every login in a GitHub object, at any depth (author, assignees,
 * requested reviewers, actor, merged_by, …): objects with a `login` and an `id`.
 */
export function loginsIn(value: unknown, into: Set<string> = new Set()): Set<string> {
  if (Array.isArray(value)) {
    for (const item of value) loginsIn(item, into);
  } else if (value && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if (typeof record.login === 'string' && record.id !== undefined) into.add(record.login);
    for (const [key, child] of Object.entries(record)) {
      if (child && typeof child === 'object' && key !== 'repository' && key !== 'head' && key !== 'base') loginsIn(child, into);
    }
  }
  return into;
}
