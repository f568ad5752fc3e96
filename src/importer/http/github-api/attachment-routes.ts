import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { routeOptions, type ApiServer, type RouteDeps } from './context.js';
import { safeContentType } from '../../attachments/names.js';
import { notFound } from './errors.js';
import { attachmentFile } from '../../store/read-api.js';
import { matchesEtag } from './respond.js';
import { FALLBACK_FILENAME } from './rewrite.js';
import { AttachmentParams } from './schemas.js';
import { inScope } from '../../../server/auth.js';

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** No script, style, frame or request from a served file, whatever it is (HTML, SVG, …). */
export const ATTACHMENT_CSP = "default-src 'none'; sandbox";

/** The stored content type, or `application/octet-stream` when it is missing or malformed (checked again: rows stored before downloads checked it). */
export { safeContentType };

/**
 * `inline; filename="…"; filename*=UTF-8''…`: an ASCII fallback with
 * quotes, backslashes, path separators and control or non-ASCII characters
 * replaced, and the exact name percent-encoded (RFC 6266, RFC 8187).
 */
export function contentDisposition(filename: string | null): string {
  const name = filename || FALLBACK_FILENAME;
  const ascii = name.replace(/[^\x20-\x7e]|["\\/%]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `inline; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/**
 * `GET /attachments/:name/:url_key/:filename`: a downloaded attachment or
 * release asset, the bytes as stored, streamed. Only a 64-hex key of a
 * `done` row of that import is served (the file name in the path is
 * informative); the path read is `<filesDir>/<sha256>` from that row.
 */
export function attachmentRoutes(server: ApiServer, deps: RouteDeps & { filesDir: string }): void {
  server.get(
    '/attachments/:name/:url_key/:filename',
    routeOptions('Attachment', 'Download an imported attachment or release asset', { params: AttachmentParams }),
    async (request, reply) => {
      const { name, url_key: key } = request.params;
      if (!SHA256_HEX.test(key) || !inScope(request, name)) throw notFound();
      const file = await attachmentFile(deps.database, name, key);
      if (!file || !SHA256_HEX.test(file.sha256)) throw notFound();
      const path = join(deps.filesDir, file.sha256);
      const info = await stat(path).catch(() => undefined);
      if (!info?.isFile()) throw notFound();
      const etag = `"${file.sha256}"`;
      reply
        .header('content-type', safeContentType(file.contentType))
        .header('content-disposition', contentDisposition(file.filename))
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', ATTACHMENT_CSP)
        .header('cache-control', 'private, max-age=3600')
        .header('etag', etag);
      if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
      return reply.header('content-length', info.size).send(createReadStream(path));
    },
  );
}
