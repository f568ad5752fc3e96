import type { Kysely, Migration } from 'kysely';

/**
 * `import_attachments.fetch_url`: where a file's bytes are asked for when
 * that is not its `url`. A release asset's `url` stays its
 * `browser_download_url` as GitHub gave it (the read API and the export
 * map that URL to the stored copy), but its bytes come from the API's asset
 * endpoint (`/repos/{o}/{r}/releases/assets/{id}`, asked with `Accept:
 * application/octet-stream`): the only place a draft release's assets can
 * be read at all. Null for attachments, and for release assets recorded
 * before this column, which are fetched from `url` until a sync lists
 * their release again (see importer/store/attachments.ts).
 */
export function importAttachmentFetchUrl(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('import_attachments').addColumn('fetch_url', 'text').execute();
    },
    async down(db: Kysely<any>) {
      await db.schema.alterTable('import_attachments').dropColumn('fetch_url').execute();
    },
  };
}
