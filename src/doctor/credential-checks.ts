import { Writable } from 'node:stream';
import { hostOf, type HostBinding } from '../credentials/hosts.js';
import { CredentialStore, type CredentialSummary } from '../credentials/store.js';
import { EgressPolicy } from '../egress/policy.js';
import { secretTargetOf } from '../feeds/sinks/url.js';
import { createLogger } from '../logging/logger.js';
import type { CredentialUse } from './store/registry-facts.js';
import { fail, messageOf, ok, type CheckContext, type CheckGroup, type CheckResult } from './types.js';

const HOW_TO_BIND = 'give every credential the hosts it may be sent to: "hosts": ["github.com", …] in the secrets file, FORGESYNC_CREDENTIAL_<NAME>_HOSTS=github.com,… in the environment';

/**
 * The credentials and feed secrets the operator defined (the secrets file
 * and FORGESYNC_CREDENTIAL_* / FORGESYNC_FEED_SECRET_*), by name and hosts
 * only; what makes one unusable (no hosts, a malformed file); and whether
 * every credential a source, an import or a feed names is defined and bound
 * to the host it is used for. No secret is read out, let alone shown.
 */
export const credentialChecks: CheckGroup = {
  name: 'credentials',
  async run({ config, protocols, registry }: CheckContext): Promise<CheckResult[]> {
    const problems: string[] = [];
    const store = new CredentialStore({ secretsFile: config.secretsFile, logger: problemCollector(problems), protocols, egress: new EgressPolicy({ allowNetworks: config.allowNetworks ?? [] }) });
    const defined = await store.list();
    const results: CheckResult[] = problems.map((problem) => fail('credentials', problem, `${HOW_TO_BIND}; until this is fixed, no credential it concerns is used (a problem in the secrets file disables the whole file)`));
    for (const credential of defined) results.push(ok(`credential:${credential.name}`, `${credential.kind === 'app' ? 'GitHub App' : 'token'}, bound to ${credential.hosts.map(bindingText).join(', ')}`));
    if (registry.read === 'ok') {
      for (const use of registry.facts.credentialUses) results.push(await useCheck(store, defined, use));
      for (const feed of registry.facts.feeds) if (feed.secret !== null) results.push(await feedSecretCheck(store, feed as { name: string; sink: string; secret: string }));
    }
    if (results.length === 0) results.push(ok('credentials', 'none defined, none used'));
    return results;
  },
};

/** Whether the credential `use` names exists and may go to the host it is used for. */
async function useCheck(store: CredentialStore, defined: readonly CredentialSummary[], use: CredentialUse): Promise<CheckResult> {
  const name = `credential:${use.credential}:${use.usedBy.replace(' ', ':')}`;
  const credential = defined.find((candidate) => candidate.name === use.credential.toLowerCase());
  if (!credential) {
    return fail(name, `${use.usedBy} names credential "${use.credential}", which is not defined`, `define it in the secrets file (FORGESYNC_SECRETS_FILE) or as FORGESYNC_CREDENTIAL_${use.credential.toUpperCase()} with its hosts`);
  }
  // Checked the way a sync checks it, for both kinds; an App's token is not minted (that would call GitHub).
  const bound = await store.checkUse(use.credential, use.url).then(() => true, () => false);
  if (bound) return ok(name, `${use.usedBy} uses it for ${hostOf(use.url)}`);
  return fail(name, `${use.usedBy} uses credential "${use.credential}" for ${hostOf(use.url)}, but it is bound to ${credential.hosts.map(bindingText).join(', ')} only`, `add ${hostOf(use.url)} to its hosts if the token is meant for it (plain http also needs http in FORGESYNC_GIT_PROTOCOLS and a binding naming http://)`);
}

async function feedSecretCheck(store: CredentialStore, feed: { name: string; sink: string; secret: string }): Promise<CheckResult> {
  const name = `feed-secret:${feed.secret}:feed:${feed.name}`;
  try {
    await store.feedSecretFor(feed.secret, secretTargetOf(new URL(feed.sink)));
    return ok(name, `feed ${feed.name} uses it for ${hostOf(feed.sink)}`);
  } catch (error) {
    return fail(name, `feed ${feed.name} names feed secret "${feed.secret}", which is not defined or not bound to ${hostOf(feed.sink)} (${messageOf(error)})`, `define "feed:${feed.secret}" in the secrets file (or FORGESYNC_FEED_SECRET_${feed.secret.toUpperCase()}) with hosts naming ${hostOf(feed.sink)}`);
  }
}

function bindingText(binding: HostBinding): string {
  const host = binding.hostname.includes(':') ? `[${binding.hostname}]` : binding.hostname;
  return `${binding.scheme ? `${binding.scheme}://` : ''}${host}${binding.port !== null ? `:${binding.port}` : ''}`;
}

/**
 * A logger that keeps what the credential store reports (`where: problem`,
 * never a secret: the store's messages describe entries, not their values)
 * instead of writing it: the doctor shows it as a failing check.
 */
function problemCollector(problems: string[]) {
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        const entry = JSON.parse(line) as { where?: string; problem?: string; msg?: string };
        problems.push(entry.problem !== undefined ? `${entry.where}: ${entry.problem}` : String(entry.msg));
      }
      done();
    },
  });
  return createLogger({ level: 'warn', destination });
}
