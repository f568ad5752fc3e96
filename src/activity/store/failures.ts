import type { ActivityDb } from './tables.js';

/*
 * When failing subjects' errors were first seen: the history the registry
 * does not keep (it has a source's last failure only, and sync_attempts a
 * hundred attempts of each, belonging to replication).
 *
 * recordFailures — in: every subject of `kind` failing now, with its group
 *   and when it last failed; out: nothing. A subject seen in the same group
 *   as before keeps its row untouched; a new one, or one whose error
 *   changed group, starts at its last failure. Subjects of `kind` not in
 *   the list recovered (or are gone): their rows are deleted, so the table
 *   holds at most one row per failing subject. It runs every sample: when
 *   nothing changed it writes nothing.
 * readFailures — in: a kind; out: its rows.
 */

export interface FailureRecord {
  subject: string;
  groupId: string;
  firstSeenAt: number;
}

/** A subject failing now: its group, and its last failure (the first-seen time of a new or regrouped row). */
export interface FailureSighting {
  subject: string;
  groupId: string;
  lastSeenAt: number;
}

const CHUNK = 500;

export async function recordFailures(db: ActivityDb, kind: string, failing: readonly FailureSighting[]): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const stored = await tx.selectFrom('activity_failures').select(['subject', 'group_id']).where('kind', '=', kind).execute();
    const storedGroup = new Map(stored.map((row) => [row.subject, row.group_id]));
    const now = new Set(failing.map((failure) => failure.subject));
    const recovered = stored.map((row) => row.subject).filter((subject) => !now.has(subject));
    for (let at = 0; at < recovered.length; at += CHUNK) {
      await tx.deleteFrom('activity_failures').where('kind', '=', kind).where('subject', 'in', recovered.slice(at, at + CHUNK)).execute();
    }
    // Only new and regrouped subjects: the others' rows already say what they would be written with.
    const rows = failing
      .filter((failure) => storedGroup.get(failure.subject) !== failure.groupId)
      .sort((a, b) => (a.subject < b.subject ? -1 : a.subject > b.subject ? 1 : 0))
      .map((failure) => ({ kind, subject: failure.subject, group_id: failure.groupId, first_seen_at: failure.lastSeenAt }));
    for (let at = 0; at < rows.length; at += CHUNK) {
      await tx
        .insertInto('activity_failures')
        .values(rows.slice(at, at + CHUNK))
        // Another process may have written the row since the select: a row already in the same group keeps its first-seen time.
        .onConflict((conflict) =>
          conflict
            .columns(['kind', 'subject'])
            .doUpdateSet((update) => ({ group_id: update.ref('excluded.group_id'), first_seen_at: update.ref('excluded.first_seen_at') }))
            .whereRef('activity_failures.group_id', '<>', 'excluded.group_id'),
        )
        .execute();
    }
  });
}

export async function readFailures(db: ActivityDb, kind: string): Promise<FailureRecord[]> {
  const rows = await db.selectFrom('activity_failures').select(['subject', 'group_id', 'first_seen_at']).where('kind', '=', kind).execute();
  return rows.map((row) => ({ subject: row.subject, groupId: row.group_id, firstSeenAt: Number(row.first_seen_at) }));
}
