import type { Feeds } from './module.js';

/**
 * What the rest of forgesync may ask of the feeds: add, list, run, pause,
 * replay and remove feeds, and their dead letters. Documented where
 * implemented (module.ts).
 */
export type FeedsApi = Pick<
  Feeds,
  'add' | 'list' | 'status' | 'sync' | 'resync' | 'pause' | 'resume' | 'replay' | 'deadLetters' | 'retryDeadLetters' | 'remove' | 'poll'
>;
