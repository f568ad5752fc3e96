import { createAppAuth } from '@octokit/auth-app';
import { request as octokitRequest } from '@octokit/request';
import { pinnedRequest } from '../egress/http.js';
import type { EgressPolicy } from '../egress/policy.js';
import type { Logger } from '../logging/logger.js';
import type { AppIdentity } from './app.js';

/** How long before its expiry a token is replaced: GitHub's tokens live an hour; at most 5 minutes ahead, half the lifetime of shorter ones. */
const REFRESH_AHEAD_MS = 5 * 60_000;
/** Time limit of one mint (the JWT's 10 minutes are far off). */
const MINT_TIMEOUT_MS = 30_000;
/** The largest answer of the access-token endpoint read (a token, its expiry, its permissions). */
const MAX_MINT_ANSWER_BYTES = 1024 * 1024;

/** A minted installation token, and when GitHub said it expires (epoch ms). */
interface MintedToken {
  token: string;
  expiresAt: number;
  refreshAt: number;
}

/** Why a token could not be minted; carries GitHub's status and message (neither holds the JWT or the key), for the log. */
export class InstallationTokenError extends Error {}

/**
 * The installation tokens of one App credential on one API host
 * (`https://api.github.com`, or a GitHub Enterprise host's `/api/v3`).
 *
 * @octokit/auth-app signs the App's JWT (RS256, iat 30 s back, 10 minutes)
 * and mints tokens through `POST /app/installations/{id}/access_tokens`,
 * sent here through forgesync's egress policy (`allows` decides whether the
 * API URL may carry the credential at all). Its own cache keeps a token for
 * 59 minutes whatever GitHub says its expiry is, so this class keeps the
 * token itself and asks auth-app for a fresh one (`refresh: true`) once the
 * token is within 5 minutes (or half its lifetime) of `expires_at`.
 *
 * `current()` is synchronous so that a BoundToken's `token` can read it at
 * every request: a long import keeps sending the latest token. A token due
 * for refresh is still valid; the refresh runs in the background, and a
 * failed one is logged and tried again at the next request. So that a run
 * busy elsewhere (a long git fetch) does not come back to an expired token,
 * a token read since it was minted is also refreshed on a timer at its
 * refresh time; one nobody read is left to expire (the next `fresh()` mints).
 */
export class InstallationTokens {
  #minted: MintedToken | undefined;
  #minting: Promise<MintedToken> | undefined;
  /** Whether the current token was read since it was minted (someone is using this installation). */
  #read = false;
  readonly #auth: ReturnType<typeof createAppAuth>;

  constructor(
    private readonly options: {
      credential: string;
      identity: AppIdentity;
      /** The API URL, no trailing slash. */
      apiUrl: string;
      policy: EgressPolicy;
      /** Whether a URL may carry the credential (the store's host binding and protocol checks). */
      allows: (url: URL) => boolean;
      logger: Logger;
    },
  ) {
    const { identity } = options;
    this.#auth = createAppAuth({
      appId: identity.appId,
      privateKey: identity.privateKey,
      installationId: identity.installationId,
      request: octokitRequest.defaults({
        baseUrl: options.apiUrl,
        headers: { 'user-agent': 'forgesync', 'x-github-api-version': '2022-11-28' },
        request: { fetch: this.#fetch },
      }),
      // auth-app warns through this on a clock skew it corrects; the text holds no secret, but goes to our log, not stderr.
      log: { warn: (message: string) => options.logger.warn({ event: 'github_app_clock_skew', credential: options.credential }, String(message)) },
    });
  }

  /**
   * A token valid now (minted or refreshed first when there is none, or it is
   * due for refresh).
   * @throws InstallationTokenError when GitHub refuses (or cannot be reached).
   */
  async fresh(): Promise<string> {
    const minted = this.#minted;
    if (minted && Date.now() < minted.refreshAt) return minted.token;
    return (await this.#mint()).token;
  }

  /** The latest token; starts a background refresh when it is due (the old token is still valid then). */
  current(): string {
    const minted = this.#minted;
    if (!minted) throw new InstallationTokenError('no installation token minted yet');
    this.#read = true;
    if (Date.now() >= minted.refreshAt) void this.#mint().catch(() => undefined);
    return minted.token;
  }

  /** Mints one token at a time; concurrent callers share the mint. Failures are logged (status and GitHub's message only). */
  #mint(): Promise<MintedToken> {
    this.#minting ??= (async () => {
      try {
        const answer = await this.#auth({ type: 'installation', refresh: true });
        const now = Date.now();
        const expiresAt = Date.parse(answer.expiresAt);
        const lifetime = Number.isNaN(expiresAt) ? 3_600_000 : Math.max(0, expiresAt - now);
        const minted = { token: answer.token, expiresAt: now + lifetime, refreshAt: now + lifetime - Math.min(REFRESH_AHEAD_MS, lifetime / 2) };
        this.#minted = minted;
        this.#read = false;
        this.#scheduleRefresh(minted);
        this.options.logger.info({ event: 'github_app_token_minted', credential: this.options.credential, expiresAt: new Date(minted.expiresAt).toISOString() }, `installation token of credential "${this.options.credential}" minted`);
        return minted;
      } catch (error) {
        const problem = describeFailure(error);
        this.options.logger.warn({ event: 'github_app_token_failed', credential: this.options.credential, problem }, `installation token of credential "${this.options.credential}" cannot be minted: ${problem}`);
        throw new InstallationTokenError(problem);
      } finally {
        this.#minting = undefined;
      }
    })();
    return this.#minting;
  }

  /** At `minted`'s refresh time, mints again if it is still the token in use and was read (never keeps the process alive). */
  #scheduleRefresh(minted: MintedToken): void {
    const timer = setTimeout(() => {
      if (this.#minted === minted && this.#read) void this.#mint().catch(() => undefined);
    }, Math.min(Math.max(0, minted.refreshAt - Date.now()), 2 ** 31 - 1));
    timer.unref();
  }

  /** The fetch auth-app's requests go through: only to a URL the credential is bound to, over the egress policy, no redirects. */
  readonly #fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    if (!this.options.allows(url)) throw new InstallationTokenError(`${url.host} is not a host the credential is bound to`);
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body = typeof init.body === 'string' ? init.body : undefined;
    const response = await pinnedRequest(url, {
      policy: this.options.policy,
      method: init.method ?? 'GET',
      headers,
      ...(body !== undefined ? { body } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
      timeoutMs: MINT_TIMEOUT_MS,
      maxBytes: MAX_MINT_ANSWER_BYTES,
    });
    const answerHeaders = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) answerHeaders.append(name, one);
    }
    const empty = response.status === 204 || response.status === 304 || response.status === 205;
    const answer = new Response(empty ? null : response.body, { status: response.status, headers: answerHeaders });
    Object.defineProperty(answer, 'url', { value: url.toString() });
    return answer;
  };
}

/** A mint's failure for the log: GitHub's status and message, or the network error's message; never a header or a body beyond that. */
function describeFailure(error: unknown): string {
  const status = (error as { status?: unknown }).status;
  const data = (error as { response?: { data?: unknown } }).response?.data;
  const message = data !== null && typeof data === 'object' ? (data as { message?: unknown }).message : undefined;
  if (typeof status === 'number' && status > 0) return `GitHub answered ${status}${typeof message === 'string' ? ` "${message.slice(0, 200)}"` : ''}`;
  const cause = (error as { cause?: unknown }).cause;
  const text = cause instanceof Error ? cause.message : error instanceof Error ? error.message : String(error);
  return text.slice(0, 300);
}
