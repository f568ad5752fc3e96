import { writeStamp } from '../../../store/list-memo.js';
import { importsStamp } from '../../../store/graphql-reads.js';
import type { ApiDatabase } from '../../../store/read-api.js';
import { SizedLru } from '../../../../util/sized-lru.js';

/*
 * Remembered GraphQL answers, as the REST lists remember theirs
 * (list-answers.ts): a query answered once (its rows read, rendered,
 * executed) is answered again as it is while nothing it read has changed.
 * gh sends the very same `gh issue list` query again and again; without
 * this each costs a page read and 30 issues rendered and walked by the
 * executor, where the REST page is one remembered text.
 *
 * The key is everything the answer depends on besides the stored data: the
 * copy's base its links point at, the query text, operation name and
 * variables. The data it depends on is named by stamps taken before it was
 * read: the imports table's (which import a name finds) and the write stamp
 * of each import the request read (list-memo.ts). A stamp read before the
 * data can only be older than the data, so a write racing the request
 * makes the answer unreachable, never stale. Only answers without errors,
 * of readers who see every import, and of requests that read nothing but
 * imports' objects (no node ids across imports, no user profiles, no rate
 * limit's clock) are remembered (RequestScope decides). Per process and
 * database, bounded in bytes, least recently used forgotten first.
 */

/** The bytes of answers remembered per database (per process). */
const MAX_BYTES = 32 * 1024 * 1024;
/** A larger answer (100 issues with 100 comments each) is not remembered. */
const MAX_ANSWER_BYTES = 2 * 1024 * 1024;

/** What an answer was computed from: the imports table's stamp and each import's write stamp. */
export interface AnswerStamps {
  registry: string;
  imports: { id: number; stamp: string }[];
}

interface Remembered {
  body: string;
  stamps: AnswerStamps;
}

/** Each database's remembered answers. */
const byDatabase = new WeakMap<object, SizedLru<Remembered>>();

function answersOf(database: ApiDatabase): SizedLru<Remembered> {
  let found = byDatabase.get(database.db);
  if (!found) byDatabase.set(database.db, (found = new SizedLru({ maxBytes: MAX_BYTES, maxEntryBytes: MAX_ANSWER_BYTES, sizeOf: (answer) => answer.body.length })));
  return found;
}

/** The key of a request's answer: the links' base, and the operation as sent. */
export function answerKey(base: string, operation: { query: string; operationName: string | undefined; variables: Record<string, unknown> }): string {
  return JSON.stringify([base, operation.operationName ?? null, operation.variables, operation.query]);
}

/** The imports table's stamp now: taken before a request reads anything, for the answer it may remember. */
export function registryStamp(database: ApiDatabase): Promise<string> {
  return importsStamp(database);
}

/**
 * Inputs: the database and a key. Returns the answer's JSON text remembered
 * under it when every stamp it was computed under is still current (one
 * aggregate on `imports`, one seek per import read); undefined otherwise.
 */
export async function rememberedAnswer(database: ApiDatabase, key: string): Promise<string | undefined> {
  const answers = answersOf(database);
  const found = answers.get(key);
  if (!found) return undefined;
  const current = (await importsStamp(database)) === found.stamps.registry && (await Promise.all(found.stamps.imports.map(async (used) => (await writeStamp(database, used.id)) === used.stamp))).every(Boolean);
  if (current) return found.body;
  answers.delete(key);
  return undefined;
}

/** Remembers `body` under `key`, computed under `stamps` (forgetting the least recently used beyond the budget). */
export function rememberAnswer(database: ApiDatabase, key: string, body: string, stamps: AnswerStamps): void {
  answersOf(database).set(key, { body, stamps });
}
