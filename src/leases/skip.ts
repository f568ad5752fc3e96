import type { Logger } from '../logging/logger.js';
import { describeHolder, skipMessage } from './errors.js';
import type { LeaseHolder } from './types.js';

/**
 * The one line logged when work finds its lease taken (the seed's wording,
 * naming the holder), with `subject` saying what the work was about
 * (`{ source }`, `{ import }`).
 */
export function logLeaseSkip(logger: Logger, key: string, holder: LeaseHolder | null, subject: Record<string, unknown>): void {
  logger.info(
    { event: 'lease_skip', ...subject, lease_key: key, holder: holder ? describeHolder(holder) : null },
    `Cannot obtain an exclusive lease. There must be another instance already in execution. ${skipMessage(holder)}`,
  );
}
