import type { SourceWithRegistry } from '../store/types.js';
import { failureGroupId, normaliseFailure } from './normalise.js';
import type { FailureRecord } from './store/failures.js';

/** Failing sources whose errors normalise to the same message. */
export interface FailureGroup {
  /** Stable id of the normalised message (failureGroupId). */
  id: string;
  /** The normalised message: the group's title. */
  message: string;
  /** One source's message as it was (the newest). */
  example: string;
  /** How many sources are in the group. */
  count: number;
  /** When a source of the group first failed with this error (as far as the activity module saw), epoch ms. */
  firstSeenAt: number;
  /** When a source of the group last failed, epoch ms. */
  lastSeenAt: number;
  /** The sources' names, sorted. */
  sources: string[];
  sourceIds: number[];
}

/** What the failures table records of one failing source (see store/failures.ts). */
export interface FailingSubject {
  subject: string;
  groupId: string;
  lastSeenAt: number;
}

/** The subject a source's failure is recorded under: its id (a rename keeps its history). */
export const subjectOf = (source: Pick<SourceWithRegistry, 'id'>) => String(source.id);

/**
 * Groups `failing` sources by normalised error, most sources first (then
 * the newest). A subject's first-seen time is the one `recorded` while
 * it failed in the same group; otherwise (not recorded yet, or its error
 * changed group since) its last failure.
 */
export function failureGroupsOf(failing: readonly SourceWithRegistry[], recorded: readonly FailureRecord[] = []): { groups: FailureGroup[]; subjects: FailingSubject[] } {
  const firstSeen = new Map(recorded.map((record) => [`${record.subject}\u0000${record.groupId}`, record.firstSeenAt]));
  const groups = new Map<string, FailureGroup>();
  const subjects: FailingSubject[] = [];
  for (const source of failing) {
    const raw = source.registry.lastFailure ?? 'failed without a message';
    const lastSeenAt = (source.registry.lastFailureAt ?? source.registry.lastAttemptAt ?? source.updatedAt).getTime();
    const message = normaliseFailure(raw);
    const id = failureGroupId(message);
    const subject = subjectOf(source);
    subjects.push({ subject, groupId: id, lastSeenAt });
    const seenFirst = Math.min(firstSeen.get(`${subject}\u0000${id}`) ?? lastSeenAt, lastSeenAt);
    const group = groups.get(id);
    if (!group) {
      groups.set(id, { id, message, example: raw, count: 1, firstSeenAt: seenFirst, lastSeenAt, sources: [source.name], sourceIds: [source.id] });
      continue;
    }
    group.count += 1;
    group.firstSeenAt = Math.min(group.firstSeenAt, seenFirst);
    if (lastSeenAt > group.lastSeenAt) {
      group.lastSeenAt = lastSeenAt;
      group.example = raw;
    }
    group.sources.push(source.name);
    group.sourceIds.push(source.id);
  }
  for (const group of groups.values()) group.sources.sort();
  const sorted = [...groups.values()].sort((a, b) => b.count - a.count || b.lastSeenAt - a.lastSeenAt || (a.id < b.id ? -1 : 1));
  return { groups: sorted, subjects };
}
