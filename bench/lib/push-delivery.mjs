// A signed GitHub push delivery, as the webhook benchmarks send it: the real
// `push` payload of @octokit/webhooks-examples (7 kB) with its repository
// renamed and its clone URL pointed at a local upstream.
import { createRequire } from 'node:module';
import { signBody } from '../../dist/replication/webhooks/signature.js';

/** The example push as text, looked up once (a bench makes one delivery a source). */
const PUSH_TEXT = JSON.stringify(
  createRequire(import.meta.url)('@octokit/webhooks-examples')
    .find((g) => g.name === 'push')
    .examples.find((e) => e.ref === 'refs/heads/master'),
);

/** A signed push delivery of the real @octokit/webhooks-examples payload, its clone URL pointed at `upstream`. */
export function pushDelivery(secret, upstream, fullName) {
  const payload = JSON.parse(PUSH_TEXT.split('Codertocat/Hello-World').join(fullName));
  payload.repository.clone_url = `file://${upstream}`;
  const body = Buffer.from(JSON.stringify(payload));
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'content-length': String(body.length),
      'x-github-event': 'push',
      'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
      'x-hub-signature-256': signBody(secret, body),
      'user-agent': 'GitHub-Hookshot/bench',
    },
  };
}
