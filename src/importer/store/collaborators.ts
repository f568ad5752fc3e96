import type { Compilable, Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';
import type { StoredType } from '../types.js';

/*
 * The statements of the collaborators stage beyond storing rows: GitHub's
 * collaborator lists are walked whole on every run (conditionally), so a
 * list answered anew says exactly who is in it, and whoever a run's answer
 * left out has lost that access.
 */

/** The row types the collaborator lists store: the collaborators (`affiliation=all`) and the marks of `direct` and `outside`. */
export type CollaboratorRowType = Extract<StoredType, 'collaborator' | 'collaborator_direct' | 'collaborator_outside'>;

/**
 * The statement that drops the rows of `type` a list answered anew in run
 * `run` did not give. Inputs: the import, the type and the run whose walk
 * listed it (every row that walk gave was written with that run). Deletes
 * the import's rows of that type written in other runs. Returns nothing.
 * Only for a list walked whole in `run` with a full answer: after a 304 the
 * rows of earlier runs still hold (the caller checks, see stages/index.ts).
 */
export function deleteUnlistedStep(db: Kysely<Schema>, importId: number, type: CollaboratorRowType, run: number): Compilable {
  return db.deleteFrom('import_objects').where('import_id', '=', importId).where('type', '=', type).where('run', '<>', run);
}
