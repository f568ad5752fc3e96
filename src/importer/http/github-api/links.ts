import type { AttachmentRewriter } from './rewrite.js';

/** The string fields whose attachment URLs are rewritten, wherever they appear in an answer. */
const ATTACHMENT_FIELDS = new Set(['body', 'body_html', 'body_text', 'browser_download_url']);

/** Fields that name a page of the forge's web UI: they keep pointing at the forge. */
const WEB_FIELDS = new Set(['html_url']);

/** Characters that may follow an API base in one of its URLs (`/path`, `?query`, `{/template}`, `#fragment`). */
const AFTER_BASE = new Set(['/', '?', '{', '#']);

/**
 * Whether `key` names an API link: `url`, any `*_url` except the web UI's,
 * and `href` (a pull request's or review's `_links`; their `html` one is a
 * web URL, which rewriteUrl leaves as it is).
 */
function isLinkField(key: string): boolean {
  return (key === 'url' || key === 'href' || key.endsWith('_url')) && !WEB_FIELDS.has(key);
}

/** `url` without its trailing slashes (`https://ghe.example.com/api/v3/` → `…/api/v3`). */
function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/**
 * Moves an upstream API's links onto the copy: a URL of `upstream` (the
 * import's API host, `https://api.github.com` or a GHE
 * `https://ghe.example.com/api/v3`) becomes the same path below `copy`
 * (`<public base>/github`). Only a whole base matches (one prefix check per
 * string): `https://api.github.com.evil/…` or `…/api/v30/…` stay as they are,
 * as does every other host's URL (github.com pages, avatars, downloads).
 */
export class ApiLinks {
  readonly #upstream: string;
  readonly #copy: string;

  constructor(upstream: string, copy: string) {
    this.#upstream = withoutTrailingSlash(upstream);
    this.#copy = withoutTrailingSlash(copy);
  }

  /** `url` pointed at the copy when it is one of the upstream API's, else unchanged. */
  rewriteUrl(url: string): string {
    const upstream = this.#upstream;
    if (upstream === '' || !url.startsWith(upstream)) return url;
    if (url.length > upstream.length && !AFTER_BASE.has(url[upstream.length]!)) return url;
    return this.#copy + url.slice(upstream.length);
  }
}

/** How stored JSON is answered: its API links and attachment URLs pointed at the copy. */
export interface RenderOptions {
  /** The import's API links (absent: left as stored). */
  links?: ApiLinks | undefined;
  /** The import's downloaded attachments (absent or null: none). */
  attachments?: AttachmentRewriter | null | undefined;
  /** `<public base>/github`: where rewritten attachment links point. */
  base: string;
}

/**
 * Rewrites, in place and in one walk, every API link field (`url`, `*_url`
 * but `html_url`, in nested objects and arrays too) and every attachment
 * field (`body`, `browser_download_url`, …) of `value` (parsed JSON);
 * returns it. Per string field it costs a set lookup and, for links, a
 * prefix check.
 */
export function renderLinks<T>(value: T, options: RenderOptions): T {
  const { links, attachments, base } = options;
  if (!links && !attachments) return value;
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) if (item !== null && typeof item === 'object') visit(item);
      return;
    }
    const object = node as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      const child = object[key];
      if (typeof child === 'string') {
        if (attachments && ATTACHMENT_FIELDS.has(key)) {
          const rewritten = attachments.rewriteText(child, base);
          // A download that is not an attachment of ours may still be an API URL (an asset's `url` is; its `browser_download_url` is not).
          object[key] = rewritten === child && links && isLinkField(key) ? links.rewriteUrl(child) : rewritten;
        } else if (links && isLinkField(key)) {
          object[key] = links.rewriteUrl(child);
        }
      } else if (child !== null && typeof child === 'object') {
        visit(child);
      }
    }
  };
  if (value !== null && typeof value === 'object') visit(value);
  return value;
}

/**
 * The copy's base, where every link of an answer points: FORGESYNC_PUBLIC_URL
 * when set (a proxy's `https://host/path`), else the origin the request came by.
 */
export function publicBase(publicUrl: string | undefined, requestOrigin: string): string {
  return publicUrl === undefined ? requestOrigin : withoutTrailingSlash(publicUrl);
}
