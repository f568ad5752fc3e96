import { proxyConfigured } from '../egress/proxy.js';
import { REFUSED_RANGES } from '../egress/ranges.js';
import { exportProtocol, tracingOffReason } from '../tracing/index.js';
import { traceEndpoint } from '../tracing/start.js';
import { ok, warn, type CheckContext, type CheckGroup, type CheckResult } from './types.js';

/**
 * What forgesync may reach (the egress policy: protocols, networks allowed
 * beyond the public internet, a proxy), where its traces go, and which
 * webhook endpoints accept deliveries (each needs its secret; without it
 * the endpoint answers 404).
 */
export const exposureChecks: CheckGroup = {
  name: 'exposure',
  async run({ config, protocols }: CheckContext): Promise<CheckResult[]> {
    return [egressSummary(config, protocols), tracingCheck(process.env), ...webhookChecks(config)];
  },
};

/** Whether the OTEL_* variables turn tracing on (tracing/start.ts), and where spans go: the collector's origin only (its URL or headers may hold a key). */
export function tracingCheck(env: NodeJS.ProcessEnv): CheckResult {
  const endpoint = traceEndpoint(env);
  const off = tracingOffReason(env);
  if (!endpoint) return ok('tracing', 'off: no OTEL_EXPORTER_OTLP_ENDPOINT (set it to export traces over OTLP/HTTP)');
  if (off) return warn('tracing', `off although an endpoint is set: ${off}`, 'unset OTEL_SDK_DISABLED / OTEL_TRACES_EXPORTER, or set OTEL_EXPORTER_OTLP_PROTOCOL to http/protobuf or http/json, if traces are wanted');
  let origin: string;
  try {
    origin = new URL(endpoint).origin;
  } catch {
    return warn('tracing', 'on, but OTEL_EXPORTER_OTLP_ENDPOINT is not a URL: no span will reach a collector', 'set it to the collector\'s OTLP/HTTP address, such as http://otel-collector:4318');
  }
  return ok('tracing', `on: spans exported over OTLP/HTTP (${exportProtocol(env)}) to ${origin}`);
}

function egressSummary(config: CheckContext['config'], protocols: ReadonlySet<string>): CheckResult {
  const listed = [...protocols].join(', ');
  const allowed = config.allowNetworks ?? [];
  const networks = allowed.length === 0 ? `public addresses only (${REFUSED_RANGES.length} loopback, private, link-local and reserved ranges refused)` : `public addresses and ${allowed.join(', ')}`;
  const proxy = proxyConfigured() ? '; a proxy is configured (http_proxy/https_proxy/all_proxy): git goes through it, the proxy must enforce what it may reach' : '';
  const detail = `git protocols ${listed}; networks: ${networks}${proxy}`;
  const plaintext = ['http', 'git'].filter((protocol) => protocols.has(protocol));
  if (plaintext.length > 0) {
    return warn('egress', detail, `${plaintext.join(' and ')} in FORGESYNC_GIT_PROTOCOLS ${plaintext.length === 1 ? 'sends' : 'send'} repositories (and tokens bound to http:// hosts) unencrypted; keep them only for upstreams on a trusted network`);
  }
  return ok('egress', detail);
}

/** The webhook endpoints (see replication/webhooks): each accepts deliveries only once its secret is set. */
const WEBHOOKS = [
  { endpoint: '/hooks/github', setting: 'githubWebhookSecret', env: 'FORGESYNC_GITHUB_WEBHOOK_SECRET', what: 'GitHub push and project events' },
  { endpoint: '/hooks/gitlab', setting: 'gitlabWebhookToken', env: 'FORGESYNC_GITLAB_WEBHOOK_TOKEN', what: 'GitLab push and system hooks' },
  { endpoint: '/hooks/generic/:source', setting: 'genericWebhookSecret', env: 'FORGESYNC_GENERIC_WEBHOOK_SECRET', what: 'Standard Webhooks deliveries' },
] as const;

function webhookChecks(config: CheckContext['config']): CheckResult[] {
  return WEBHOOKS.map(({ endpoint, setting, env, what }) =>
    config[setting] !== undefined
      ? ok(`webhook:${endpoint}`, `secret set (${env}): ${what} are accepted when signed with it`)
      : warn(`webhook:${endpoint}`, `no secret: ${endpoint} answers 404 and syncs wait for their schedule`, `set ${env} (and the same secret at the sender) if you want ${what} to trigger syncs; otherwise nothing to do`),
  );
}
