import { InvalidInputError } from '../errors.js';

const HOW_TO_DEFINE =
  'the operator defines credentials, each bound to the hosts it may be sent to, in FORGESYNC_SECRETS_FILE ' +
  '({ "<name>": { "token": "…", "hosts": ["github.com"] } }) or as FORGESYNC_CREDENTIAL_<NAME>=<token> ' +
  'with FORGESYNC_CREDENTIAL_<NAME>_HOSTS=host[:port],…; a host alone means https on port 443 only, plain http needs ' +
  'http://host[:port] or host:port and http in FORGESYNC_GIT_PROTOCOLS';

/**
 * A credential cannot be used for a URL. One message for every reason (not
 * defined, not bound to that host, the secrets file unreadable or malformed),
 * so that nobody can learn from it what the operator has defined or which
 * files exist; the operator finds the reason in the log.
 */
export class CredentialUnavailableError extends InvalidInputError {
  constructor(
    readonly credential: string,
    readonly host: string,
  ) {
    super(`credential "${credential.slice(0, 64)}" is not available for ${host}: ${HOW_TO_DEFINE}`);
  }
}

/** A credential reference is not the name of one (an `env:` or `file:` reference, a malformed name). */
export class InvalidCredentialRefError extends InvalidInputError {
  constructor(reference: string) {
    super(
      `credential reference ${JSON.stringify(reference.slice(0, 40))} is not a credential name (1-64 letters, digits and "_", ` +
        `starting with a letter; env: and file: references are not accepted): ${HOW_TO_DEFINE}`,
    );
  }
}

/** How an operator defines a feed secret, and how a feed names one (said by every refusal of one). */
export const HOW_TO_DEFINE_FEED_SECRET =
  'the operator defines feed secrets, each bound to the sink hosts it may be used with, in FORGESYNC_SECRETS_FILE ' +
  '({ "feed:<name>": { "secret": "…", "hosts": ["nats.internal:4222", "hooks.example.com"] } }) or as FORGESYNC_FEED_SECRET_<NAME>=<secret> ' +
  'with FORGESYNC_FEED_SECRET_<NAME>_HOSTS=host[:port],… (a NATS host with its port); a feed names one with --secret <name> (API: "secret")';

/**
 * A feed's secret cannot be used with its sink. One message, word for word,
 * for every reason (a malformed name, a name nobody defined, an environment
 * variable that is not a feed secret, a sink host it is not bound to, the
 * secrets file unreadable): it repeats nothing the caller gave and tells
 * nothing about the environment; the operator finds the reason in the log.
 */
export class FeedSecretUnavailableError extends InvalidInputError {
  constructor() {
    super(`the feed's secret cannot be used with its sink: ${HOW_TO_DEFINE_FEED_SECRET}`);
  }
}
