import { type Compilable, type Kysely } from 'kysely';
import type { AttachmentState } from '../../store/import-tables.js';
import type { Schema } from '../../store/types.js';
import { urlKey } from '../attachments/url-key.js';

/** A file linked from a body (an attachment) or a release asset, to download once. */
export interface FoundFile {
  url: string;
  kind: 'attachment' | 'release_asset';
  /** False: a link to another host, left as it is and reported. */
  allowed: boolean;
  /** Where the bytes are asked for when not `url`: a release asset's API endpoint (its `url` stays the `browser_download_url`). */
  fetchUrl?: string;
}

/**
 * The statement that records files found on a page, once per distinct URL
 * (a second mention changes nothing, except that a release asset's API
 * endpoint is filled in or brought up to date on a row recorded without
 * it or with another: a row from before migration 015, or an asset
 * uploaded again under the same name). Inputs: the files. Stores
 * import_attachments rows: pending, or refused for other hosts.
 */
export function addFilesStep(db: Kysely<Schema>, importId: number, run: number, files: readonly FoundFile[], now: number): Compilable | null {
  const unique = new Map<string, FoundFile>();
  for (const file of files) unique.set(urlKey(file.url), file);
  if (unique.size === 0) return null;
  return db
    .insertInto('import_attachments')
    .values(
      [...unique].map(([key, file]) => ({
        import_id: importId,
        url_key: key,
        url: file.url,
        kind: file.kind,
        state: (file.allowed ? 'pending' : 'refused') as AttachmentState,
        error: file.allowed ? null : 'not on the project\'s own hosts: left as a link',
        run,
        updated_at: now,
        fetch_url: file.fetchUrl ?? null,
      })),
    )
    .onConflict((oc) =>
      oc
        .columns(['import_id', 'url_key'])
        .doUpdateSet({ fetch_url: (eb) => eb.ref('excluded.fetch_url') })
        .where((eb) => eb.and([eb('excluded.fetch_url', 'is not', null), eb.or([eb('import_attachments.fetch_url', 'is', null), eb('import_attachments.fetch_url', '<>', eb.ref('excluded.fetch_url'))])])),
    );
}

/** Files still to download (pending, or failed in an earlier try). */
export async function filesToDownload(db: Kysely<Schema>, importId: number): Promise<{ key: string; url: string; kind: string }[]> {
  const rows = await db
    .selectFrom('import_attachments')
    .select(['url_key', 'url', 'kind'])
    .where('import_id', '=', importId)
    .where('state', 'in', ['pending', 'failed'])
    .orderBy('url_key')
    .execute();
  return rows.map((row) => ({ key: row.url_key, url: row.url, kind: row.kind }));
}

/** The import_attachments row of `key` (the SHA-256 of its URL), if any. */
export async function findFile(db: Kysely<Schema>, importId: number, key: string) {
  return db.selectFrom('import_attachments').selectAll().where('import_id', '=', importId).where('url_key', '=', key).executeTakeFirst();
}

/** Records a download's outcome. Inputs: key and outcome. Stores the row's state and, when done, the file's sha256, size, type and name. */
export function finishFileStep(
  db: Kysely<Schema>,
  importId: number,
  key: string,
  outcome: { state: AttachmentState; sha256?: string; size?: number; contentType?: string | null; filename?: string | null; error?: string | null },
  now: number,
): Compilable {
  return db
    .updateTable('import_attachments')
    .set({
      state: outcome.state,
      sha256: outcome.sha256 ?? null,
      size: outcome.size ?? null,
      content_type: outcome.contentType ?? null,
      filename: outcome.filename ?? null,
      error: outcome.error ?? null,
      updated_at: now,
    })
    .where('import_id', '=', importId)
    .where('url_key', '=', key);
}
