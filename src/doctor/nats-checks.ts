import type { NatsConnection } from '@nats-io/transport-node';
import { CredentialStore } from '../credentials/store.js';
import { EgressPolicy } from '../egress/policy.js';
import { NATS_DEFAULT_PORT, natsSubjectOf, redactSinkUrl, secretTargetOf } from '../feeds/sinks/url.js';
import { createLogger } from '../logging/logger.js';
import { fail, messageOf, ok, type CheckContext, type CheckGroup, type CheckResult } from './types.js';

/** The feeds that publish to one NATS server, with the subject each publishes to and the feed secret (token) it names. */
interface NatsServer {
  host: string;
  port: number;
  feeds: { name: string; url: URL; subject: string; secret: string | null }[];
}

/**
 * The NATS servers the feeds publish to (sinks `nats://host[:port]/<subject>`,
 * read from the registry): reachable through the egress policy, with the
 * feed's token, JetStream enabled, and a stream capturing each feed's subject
 * (the sink creates none: a missing stream fails every delivery).
 */
export const natsChecks: CheckGroup = {
  name: 'nats',
  async run(context: CheckContext): Promise<CheckResult[]> {
    if (context.registry.read === 'failed') return [];
    const servers = natsServersOf(context.registry.facts.feeds);
    const results = await Promise.all(servers.map((server) => checkServer(server, context)));
    return results.flat();
  },
};

function natsServersOf(feeds: readonly { name: string; sink: string; secret: string | null }[]): NatsServer[] {
  const servers = new Map<string, NatsServer>();
  for (const feed of feeds) {
    if (!/^nats:/i.test(feed.sink)) continue;
    const url = new URL(feed.sink);
    const port = url.port === '' ? NATS_DEFAULT_PORT : Number(url.port);
    const key = `${url.hostname}:${port}`;
    const server = servers.get(key) ?? { host: url.hostname, port, feeds: [] };
    server.feeds.push({ name: feed.name, url, subject: natsSubjectOf(url), secret: feed.secret });
    servers.set(key, server);
  }
  return [...servers.values()];
}

async function checkServer(server: NatsServer, { config, timeoutMs }: CheckContext): Promise<CheckResult[]> {
  const where = `${server.host.includes(':') ? `[${server.host}]` : server.host}:${server.port}`;
  const name = `nats:${where}`;
  const feedNames = server.feeds.map((feed) => feed.name).join(', ');
  // Loaded only when a feed publishes to NATS, as the sinks do.
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const egress = new EgressPolicy({ allowNetworks: config.allowNetworks ?? [] });
  let nc: NatsConnection;
  try {
    const target = await egress.resolve(server.host, { timeoutMs });
    const servers = target.addresses.map(({ address, family }) => (family === 6 ? `[${address}]:${server.port}` : `${address}:${server.port}`));
    const token = await tokenFor(server, config);
    nc = await connect({ servers, name: 'forgesync-doctor', timeout: timeoutMs, resolve: false, ignoreClusterUpdates: true, maxReconnectAttempts: 0, ...(token !== undefined ? { token } : {}) });
  } catch (error) {
    return [
      fail(name, `NATS at ${where} (feeds ${feedNames}) cannot be reached: ${messageOf(error)}`, 'check that nats-server runs there, that FORGESYNC_ALLOW_NETWORKS allows a private address, and that the feed secret the feed names holds its token'),
    ];
  }
  try {
    const version = nc.info?.version ?? 'unknown';
    const results = [ok(name, `NATS ${version} at ${where} (feeds ${feedNames})`)];
    let jsm;
    try {
      jsm = await jetstreamManager(nc, { timeout: timeoutMs });
    } catch (error) {
      return [...results, fail(`${name}:jetstream`, `JetStream is not available: ${messageOf(error)}`, 'start nats-server with JetStream enabled (-js, or jetstream {} in its configuration)')];
    }
    for (const feed of server.feeds) {
      try {
        results.push(ok(`feed:${feed.name}:stream`, `subject ${feed.subject} is captured by stream ${await jsm.streams.find(feed.subject)}`));
      } catch (error) {
        results.push(fail(`feed:${feed.name}:stream`, `no JetStream stream captures subject ${feed.subject} of ${redactSinkUrl(feed.url.href)}: ${messageOf(error)}`, `create one, e.g. \`nats stream add FORGESYNC --subjects '${feed.subject}'\` with the retention and replicas you want`));
      }
    }
    return results;
  } finally {
    await nc.close().catch(() => {});
  }
}

/** The token the feeds of this server name (the first one defined and bound to it), as the sink would send it. */
async function tokenFor(server: NatsServer, config: CheckContext['config']): Promise<string | undefined> {
  const store = new CredentialStore({ secretsFile: config.secretsFile, logger: createLogger({ level: 'silent' }) });
  for (const feed of server.feeds) {
    if (feed.secret === null) continue;
    const secret = await store.feedSecretFor(feed.secret, secretTargetOf(feed.url)).catch(() => undefined);
    if (secret !== undefined) return secret;
  }
  return undefined;
}
