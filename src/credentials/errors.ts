import { InvalidInputError } from '../errors.js';

const HOW_TO_DEFINE =
  'the operator defines credentials, each bound to the hosts it may be sent to, in FORGESYNC_SECRETS_FILE ' +
  '({ "<name>": { "token": "…", "hosts": ["github.com"] } }) or as FORGESYNC_CREDENTIAL_<NAME>=<token> ' +
  'with FORGESYNC_CREDENTIAL_<NAME>_HOSTS=host[:port],…';

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
