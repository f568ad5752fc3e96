import type { Logger } from '../../logging/logger.js';
import type { DeliveryRun, WebhookDelivery } from '../options.js';
import type { WebhookDeliveryRepository } from '../store/webhook-deliveries.js';

/**
 * Runs `act` for the first delivery of an id from a provider, and for no
 * other delivery of that id until its `expiresAt`, in any process sharing
 * the registry: the id is claimed in one atomic statement first (a claim
 * that expired before `receivedAt` is free again). When `act` throws, the
 * claim is given back, so the sender's retry is acted on. (A process dying
 * between the claim and act's write loses that one request; the source's
 * schedule still syncs it.) Expired claims are deleted now and then, at
 * most once a minute per process.
 */
export async function oncePerDelivery<T>(claims: { deliveries: WebhookDeliveryRepository; logger: Logger }, delivery: WebhookDelivery, act: () => Promise<T>): Promise<DeliveryRun<T>> {
  const { deliveries, logger } = claims;
  const claim = await deliveries.claim(delivery.provider, delivery.id, delivery.expiresAt, delivery.receivedAt);
  if (!claim) return { duplicate: true };
  let value: T;
  try {
    value = await act();
  } catch (error) {
    await deliveries.release(claim).catch(() => undefined); // the act's error is the one to report
    throw error;
  }
  await deliveries.pruneIfDue().catch((error: unknown) => {
    // Only space is at stake; the next prune catches up.
    logger.warn({ event: 'webhook_deliveries_prune_failed', err: error }, 'pruning webhook_deliveries failed');
  });
  return { duplicate: false, value };
}
