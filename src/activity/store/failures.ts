import { sql } from 'kysely';
import type { ActivityDb } from './tables.js';

/*
 * What failing subjects' errors were first and last seen: the history the
 * registry does not keep (it has a source's last failure only, and
 * sync_attempts a hundred attempts of each, belonging to replication).
 *
 * recordFailures — in: every subject of `kind` failing now, with its group
 *   and when it last failed; out: nothing. A subject seen in the same group
 *   as before keeps its first-seen time; a new one, or one whose error
 *   changed group, starts at its last failure. Subjects of `kind` not in
 *   the list recovered (or are gone): their rows are deleted, so the table
 *   holds at most one row per failing subject.
 * readFailures — in: a kind; out: its rows.
 */

export interface FailureRecord {
  subject: string;
  groupId: string;
  firstSeenAt: number;
  lastSeenAt: number;
}

const CHUNK = 500;

export async function recordFailures(db: ActivityDb, kind: string, failing: readonly Omit<FailureRecord, 'firstSeenAt'>[]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const stored = await tx.selectFrom('activity_failures').select('subject').where('kind', '=', kind).execute();
    const now = new Set(failing.map((failure) => failure.subject));
    const recovered = stored.map((row) => row.subject).filter((subject) => !now.has(subject));
    for (let at = 0; at < recovered.length; at += CHUNK) {
      await tx.deleteFrom('activity_failures').where('kind', '=', kind).where('subject', 'in', recovered.slice(at, at + CHUNK)).execute();
    }
    const rows = [...failing]
      .sort((a, b) => (a.subject < b.subject ? -1 : a.subject > b.subject ? 1 : 0))
      .map((failure) => ({ kind, subject: failure.subject, group_id: failure.groupId, first_seen_at: failure.lastSeenAt, last_seen_at: failure.lastSeenAt }));
    for (let at = 0; at < rows.length; at += CHUNK) {
      await tx
        .insertInto('activity_failures')
        .values(rows.slice(at, at + CHUNK))
        .onConflict((conflict) =>
          conflict.columns(['kind', 'subject']).doUpdateSet({
            first_seen_at: sql<number>`case when activity_failures.group_id = excluded.group_id then activity_failures.first_seen_at else excluded.first_seen_at end`,
            group_id: sql<string>`excluded.group_id`,
            last_seen_at: sql<number>`excluded.last_seen_at`,
          }),
        )
        .execute();
    }
  });
}

export async function readFailures(db: ActivityDb, kind: string): Promise<FailureRecord[]> {
  const rows = await db.selectFrom('activity_failures').select(['subject', 'group_id', 'first_seen_at', 'last_seen_at']).where('kind', '=', kind).execute();
  return rows.map((row) => ({ subject: row.subject, groupId: row.group_id, firstSeenAt: Number(row.first_seen_at), lastSeenAt: Number(row.last_seen_at) }));
}
