import { sql, type Kysely, type Migration } from 'kysely';

/** What the environment variable of a feed secret starts with (`FORGESYNC_FEED_SECRET_<NAME>`). */
const FEED_SECRET_ENV = 'FORGESYNC_FEED_SECRET_';

/**
 * `feeds.secret_env` becomes `feeds.secret`: a feed names a feed secret the
 * operator defined (bound to the sink hosts it may be used with), no longer
 * any environment variable. A stored `FORGESYNC_FEED_SECRET_<NAME>` becomes
 * the feed secret `<name>` (what that variable defines now, once its
 * `_HOSTS` binding is set); any other variable's name is kept as a feed
 * secret name, which resolves only if the operator defines a feed secret of
 * that name: until then the feed fails with a message saying how, and sends
 * nothing.
 */
export function feedSecrets(): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('feeds').renameColumn('secret_env', 'secret').execute();
      await sql`UPDATE feeds SET secret = lower(substr(secret, ${sql.lit(FEED_SECRET_ENV.length + 1)}))
        WHERE substr(secret, 1, ${sql.lit(FEED_SECRET_ENV.length)}) = ${sql.lit(FEED_SECRET_ENV)} AND length(secret) > ${sql.lit(FEED_SECRET_ENV.length)}`.execute(db);
    },

    async down(db: Kysely<any>) {
      // Back to a variable's name: the one defining the feed secret of that name.
      await sql`UPDATE feeds SET secret = ${sql.lit(FEED_SECRET_ENV)} || upper(secret) WHERE secret IS NOT NULL`.execute(db);
      await db.schema.alterTable('feeds').renameColumn('secret', 'secret_env').execute();
    },
  };
}
