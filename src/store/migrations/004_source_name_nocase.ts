import { sql, type Kysely, type Migration } from 'kysely';

/**
 * Source names are unique regardless of case: `Repo` and `repo` would be told
 * apart by the registry but not by a case-insensitive file system, a user
 * reading a list, or a webhook path. One unique index on `lower(name)`
 * (SQLite and PostgreSQL both index expressions). A database that already
 * holds two names differing only in case fails this migration with the index
 * error; rename one of them (`forgesync remove` and add it again) and reopen.
 */
export function sourceNameNocase(): Migration {
  return {
    async up(db: Kysely<any>) {
      await sql`CREATE UNIQUE INDEX sources_name_nocase_idx ON sources (lower(name))`.execute(db);
    },

    async down(db: Kysely<any>) {
      await sql`DROP INDEX sources_name_nocase_idx`.execute(db);
    },
  };
}
