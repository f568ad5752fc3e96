import type { StoredType } from '../types.js';

/** The row types the collaborator lists store: the collaborators (`affiliation=all`) and the marks of `direct` and `outside`. */
export type CollaboratorRowType = Extract<StoredType, 'collaborator' | 'collaborator_direct' | 'collaborator_outside'>;
