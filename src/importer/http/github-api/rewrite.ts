import { doneAttachments, type ApiDatabase, type AttachmentLink } from '../../store/read-api.js';
import { renderLinks } from './links.js';

/** How long an import's attachment list is reused before it is read again. */
const CACHE_MS = 5_000;
/** Imports whose attachment lists are kept at once. */
const CACHE_ENTRIES = 256;

/** The name an attachment is served under when none was recorded. */
export const FALLBACK_FILENAME = 'attachment';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * The path (below the API's prefix) that serves an attachment:
 * `/attachments/<import name>/<url key>/<file name>`, each part URL-encoded.
 */
export function attachmentPath(importName: string, link: Pick<AttachmentLink, 'urlKey' | 'filename'>): string {
  return `/attachments/${encodeURIComponent(importName)}/${link.urlKey}/${encodeURIComponent(link.filename || FALLBACK_FILENAME)}`;
}

/** Characters that continue a URL: a known URL followed by one of them is part of a longer, different URL. */
const URL_CONTINUES = /[\w\-/%~+=&?#@]/;
/** `.` and `:` continue it only when more of a word follows (`….png.bak`, not the full stop of a sentence). */
const URL_CONTINUES_AFTER_DOT = /[.:]\w/y;

/**
 * Replaces an import's downloaded attachment URLs by links to the stored
 * copies in one scan of each string: at each `scheme://` it looks up the
 * longest known URL starting there (a map lookup per distinct URL length,
 * so the cost does not grow with the number of attachments). A URL matches
 * only where it ends: not where the text goes on with more of a URL
 * (`….png2`, `…/more`, `….png.bak`).
 */
export class AttachmentRewriter {
  readonly #paths: Map<string, string>;
  /** The distinct lengths of the known URLs, longest first. */
  readonly #lengths: number[];
  /** Where a known URL may start: any of their schemes (`https://`, …). */
  readonly #starts: RegExp;

  constructor(importName: string, links: readonly AttachmentLink[]) {
    const usable = links.filter((link) => link.url.includes('://'));
    this.#paths = new Map(usable.map((link) => [link.url, attachmentPath(importName, link)]));
    this.#lengths = [...new Set(usable.map((link) => link.url.length))].sort((a, b) => b - a);
    const schemes = [...new Set(usable.map((link) => link.url.slice(0, link.url.indexOf('://') + 3)))];
    this.#starts = new RegExp(schemes.length > 0 ? schemes.map(escapeRegExp).join('|') : '(?!)', 'g');
  }

  #endsAt(text: string, end: number): boolean {
    if (end >= text.length) return true;
    if (URL_CONTINUES.test(text[end]!)) return false;
    URL_CONTINUES_AFTER_DOT.lastIndex = end;
    return !URL_CONTINUES_AFTER_DOT.test(text);
  }

  /** `text` with every known URL replaced by `<base><path>` (`base`: the origin and the API's prefix). */
  rewriteText(text: string, base: string): string {
    const starts = new RegExp(this.#starts);
    let out = '';
    let copied = 0;
    for (let match = starts.exec(text); match; match = starts.exec(text)) {
      const at = match.index;
      for (const length of this.#lengths) {
        if (at + length > text.length) continue;
        const path = this.#paths.get(text.slice(at, at + length));
        if (path !== undefined && this.#endsAt(text, at + length)) {
          out += text.slice(copied, at) + base + path;
          copied = at + length;
          starts.lastIndex = copied;
          break;
        }
      }
    }
    return copied === 0 ? text : out + text.slice(copied);
  }

  /** Rewrites, in place, the attachment fields anywhere in `value` (parsed JSON); returns it. */
  rewrite<T>(value: T, base: string): T {
    return renderLinks(value, { attachments: this, base });
  }
}

/**
 * Each import's rewriter, read once per request and reused for a few seconds
 * (so a burst of pages does not read the attachment list every time);
 * null for an import without downloaded attachments.
 */
export class AttachmentLinks {
  readonly #cache = new Map<number, { name: string; expires: number; rewriter: Promise<AttachmentRewriter | null> }>();

  constructor(
    private readonly database: ApiDatabase,
    private readonly now: () => number = Date.now,
  ) {}

  forImport(importId: number, importName: string): Promise<AttachmentRewriter | null> {
    const now = this.now();
    const cached = this.#cache.get(importId);
    if (cached && cached.expires > now && cached.name === importName) return cached.rewriter;
    const rewriter = doneAttachments(this.database, importId).then((links) => (links.length > 0 ? new AttachmentRewriter(importName, links) : null));
    this.#cache.delete(importId);
    if (this.#cache.size >= CACHE_ENTRIES) {
      for (const [id, entry] of this.#cache) if (entry.expires <= now) this.#cache.delete(id);
      if (this.#cache.size >= CACHE_ENTRIES) this.#cache.delete(this.#cache.keys().next().value!);
    }
    this.#cache.set(importId, { name: importName, expires: now + CACHE_MS, rewriter });
    // A failed read is not kept: the next request tries again.
    rewriter.catch(() => {
      if (this.#cache.get(importId)?.rewriter === rewriter) this.#cache.delete(importId);
    });
    return rewriter;
  }
}
