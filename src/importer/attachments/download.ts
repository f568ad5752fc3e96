import { downloadByContent, type ContentDownloadOptions } from '../../egress/download.js';
import { safeContentType } from './names.js';

/** How an attachment is downloaded (see egress/download.ts): stored by its SHA-256 in `filesDir`. */
export type DownloadOptions = Omit<ContentDownloadOptions, 'expected'>;

/** A file stored, or the answer that ended the download without one (an error, a redirect not followed). */
export type Download =
  | { stored: true; sha256: string; size: number; contentType: string }
  | { stored: false; status: number; location: string | undefined };

/**
 * GETs `url` and stores a 200's body as `<filesDir>/<sha256>` (streamed,
 * hashed on the way, capped, renamed into place whole: downloadByContent),
 * with the content type it may be served with.
 * @throws what downloadByContent throws.
 */
export async function downloadFile(url: URL, options: DownloadOptions): Promise<Download> {
  const download = await downloadByContent(url, options);
  if (!download.stored) return { stored: false, status: download.status, location: 'location' in download ? download.location : undefined };
  return { stored: true, sha256: download.sha256, size: download.size, contentType: safeContentType(download.headers['content-type']) };
}
