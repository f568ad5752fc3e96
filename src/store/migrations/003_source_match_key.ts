import type { Kysely, Migration } from 'kysely';
import { matchKey } from '../../util/match-key.js';

/**
 * `sources.match_key`: the normalised `host/owner/repo` of the source's URL
 * (see match-key.ts), indexed, so a webhook finds its source with one index
 * lookup however the forge spells the URL. Existing rows are backfilled.
 */
export function sourceMatchKey(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('sources').addColumn('match_key', 'text').execute();
      const rows: { id: number | string; url: string }[] = await db.selectFrom('sources').select(['id', 'url']).execute();
      for (const row of rows) {
        await db.updateTable('sources').set({ match_key: matchKey(row.url) }).where('id', '=', row.id).execute();
      }
      await db.schema.createIndex('sources_match_key_idx').on('sources').column('match_key').execute();
    },

    async down(db: Kysely<any>) {
      await db.schema.dropIndex('sources_match_key_idx').execute();
      await db.schema.alterTable('sources').dropColumn('match_key').execute();
    },
  };
}
