import type { Importer } from './module.js';

/**
 * What the rest of forgesync may ask of the importer: imports of GitHub
 * projects (create, read, sync, resume, cancel, export) and running one
 * here until it ends. Documented where implemented (module.ts).
 */
export type ImporterApi = Pick<
  Importer,
  'create' | 'get' | 'list' | 'status' | 'requestSync' | 'resume' | 'cancel' | 'export' | 'runHere' | 'runHereWaiting' | 'tick' | 'receiveDelivery'
>;
