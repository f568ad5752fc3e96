import { createHash } from 'node:crypto';

/** The key of an attachment URL in `import_attachments` and `import_objects`: the SHA-256 of the URL, hex. */
export function urlKey(url: string): string {
  return createHash('sha256').update(url).digest('hex');
}
