import type { FastifyInstance } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Replication } from '../module.js';
import { refusal } from './delivery.js';
import { genericReceiver } from './generic.js';
import { actOn } from './match.js';
import { openReaders, type DeliveryReaders } from './readers.js';
import { header } from '../../server/routes/common.js';
import { registerReceiver, type ReceiverSpec } from './receiver.js';
import { tokenMatches } from './signature.js';

export { signBody } from './signature.js';
export type { WebhookProvider, WebhookResult } from './delivery.js';

/**
 * The webhook receivers, under `/hooks`:
 * - `POST /hooks/github` — `X-Hub-Signature-256` (HMAC-SHA256 of the raw
 *   body, FORGESYNC_GITHUB_WEBHOOK_SECRET); JSON or form-encoded `payload=`.
 * - `POST /hooks/gitlab` — `X-Gitlab-Token` (FORGESYNC_GITLAB_WEBHOOK_TOKEN).
 * - `POST /hooks/generic/:source` — Standard Webhooks (`webhook-id`,
 *   `webhook-timestamp`, `webhook-signature`; FORGESYNC_GENERIC_WEBHOOK_SECRET
 *   as `whsec_<base64>`), for any other forge or script; each webhook-id is
 *   acted on once, and every authenticated delivery gets the same answer
 *   (see generic.ts).
 *
 * A delivery is answered 202 once its sync request is recorded in the
 * registry (the worker is nudged; the registry's request counter coalesces
 * a storm into a few syncs). Missing or bad signature or token → 401,
 * malformed payload → 400, body over the server's bodyLimit → 413, no
 * matching source → 202 with nothing recorded, unconfigured receiver → 404.
 * A refused delivery never touches the store.
 */
export function webhookRoutes(replication: Replication, options: { readerThreads: number }): FastifyPluginAsyncZod {
  return async (server) => {
    const scope = server as unknown as FastifyInstance;
    const readers = openReaders({ github: replication.webhookSecrets.github }, options.readerThreads);
    scope.addHook('onClose', () => readers.close());
    for (const spec of receivers(replication, readers)) await scope.register(registerReceiver(replication, spec));
  };
}

/**
 * GitHub's and GitLab's deliveries are read (signature, payload) by
 * `readers`, on reader threads when there are any; what a delivery asks
 * for is then done here (actOn). The generic receiver checks and reads on
 * the event loop: its deliveries name their source in the path, and its
 * once-per-id claim needs the registry between the check and the answer.
 */
function receivers(replication: Replication, readers: DeliveryReaders): ReceiverSpec[] {
  const secrets = replication.webhookSecrets;
  return [
    {
      provider: 'github',
      path: '/github',
      summary: 'GitHub webhook',
      description: 'push, create, delete → sync request; repository renamed/transferred/deleted/edited; ping → 200. Signed with X-Hub-Signature-256.',
      secret: secrets.github,
      secretEnv: 'FORGESYNC_GITHUB_WEBHOOK_SECRET',
      checkHeaders: (request) =>
        header(request, 'x-hub-signature-256') ? null : refusal(401, 'unauthorized', 'unauthorized', 'missing X-Hub-Signature-256 header'),
      handle: async (request, raw) =>
        actOn(
          replication,
          await readers.read({
            provider: 'github',
            body: raw,
            event: header(request, 'x-github-event'),
            signature: header(request, 'x-hub-signature-256'),
            contentType: header(request, 'content-type'),
          }),
        ),
    },
    {
      provider: 'gitlab',
      path: '/gitlab',
      summary: 'GitLab webhook',
      description: 'Push Hook, Tag Push Hook, System Hook (push, tag_push, repository_update) → sync request. Authenticated by X-Gitlab-Token.',
      secret: secrets.gitlab,
      secretEnv: 'FORGESYNC_GITLAB_WEBHOOK_TOKEN',
      checkHeaders: (request, secret) => {
        const token = header(request, 'x-gitlab-token');
        if (token === undefined) return refusal(401, 'unauthorized', 'unauthorized', 'missing X-Gitlab-Token header');
        return tokenMatches(token, secret) ? null : refusal(401, 'unauthorized', 'unauthorized', 'X-Gitlab-Token does not match');
      },
      handle: async (request, raw) =>
        actOn(replication, await readers.read({ provider: 'gitlab', body: raw, event: header(request, 'x-gitlab-event'), contentType: header(request, 'content-type') })),
    },
    genericReceiver(replication),
  ];
}
