import type { Replication } from '../module.js';
import type { DeliveryOutcome } from './delivery.js';
import { requestSources } from './match.js';

/**
 * Acts on one verified generic delivery for the source named in the path:
 * a sync request (202 accepted), 202 ignored when the source is disabled,
 * 202 unknown_repository (nothing recorded) when no source has that name.
 * The body is not needed; when it is JSON it must be well-formed.
 */
export async function handleGeneric(app: Replication, name: string): Promise<DeliveryOutcome> {
  const source = await app.sources.get(name);
  return requestSources(app, 'generic', source ? [source] : []);
}
