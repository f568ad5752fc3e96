import { closeSync, constants, fchmodSync, fstatSync, mkdirSync, openSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { addressLiteral, type ResolvedHost } from '../egress/address.js';
import { EgressPolicy } from '../egress/policy.js';
import { buildGitEnv, checkToken, curlResolveEntry, makeRedactor, sshPathProblem, tokenScopeFor, type SshPin, type SshSettings } from './env.js';
import { GitAbortedError, GitError, InvalidGitOptionError, InvalidGitProtocolError } from './errors.js';
import { killGitOnExit, runGitProcess, startGitProcess, type GitProcess, type GitRunResult } from './process.js';
import type { RemoteListing } from './refs.js';
import { resolveHttpRemote } from './remote-refs.js';
import { KNOWN_PROTOCOLS, remoteTarget, validateRemoteUrl } from './url.js';

/** Default time limit of one git command: 10 minutes. */
export const DEFAULT_GIT_TIMEOUT_MS = 10 * 60 * 1000;
/** Default cap on the stdout collected from one git command: 64 MiB. */
export const DEFAULT_MAX_STDOUT_BYTES = 64 * 1024 * 1024;

export interface GitRunnerOptions {
  /** Allowed transports (see `parseProtocols`); everything else is refused by git itself. */
  protocols: ReadonlySet<string>;
  /** Time limit of a command when the call gives none (default 10 min). */
  defaultTimeoutMs?: number;
  /** The git executable (default `git`, looked up on PATH). */
  gitBinary?: string;
  /** Largest stdout accepted, in bytes (default 64 MiB). */
  maxStdoutBytes?: number;
  /** Check every received object (`transfer.fsckObjects`); stricter, slower, refuses some old repositories. */
  fsckObjects?: boolean;
  /** What git (and the in-process ref reader) may connect to; default: the policy's defaults (no private networks). */
  egress?: EgressPolicy;
  /** forgesync's data directory: ssh's known_hosts is `<dataDir>/ssh/known_hosts`. Without one, ssh trusts no host key. */
  dataDir?: string;
  /** The private key ssh offers (the only one); none by default. */
  sshKeyFile?: string;
  /** Let ssh use the agent at SSH_AUTH_SOCK (default false: the agent is not even visible to git). */
  sshAgent?: boolean;
}

/**
 * An upstream URL made ready for git by {@link GitRunner.prepareRemote}: checked
 * against the egress policy, redirects resolved, connections pinned. The only
 * way a git process may reach the network: without one, git gets no network
 * transport at all. Frozen, and known only to the runner that made it.
 */
export interface PreparedRemote {
  /** The URL git is given: the source's, or where its redirects lead (as git would have rebased it). */
  readonly url: string;
  /** The validated URL it was prepared from (mirrors are named and recorded by it). */
  readonly requested: string;
  /** git's transport for {@link url}. */
  readonly protocol: 'https' | 'http' | 'ssh' | 'git' | 'file';
  /** Where git connects, with the checked addresses; undefined for local repositories. */
  readonly target: ResolvedHost | undefined;
  /** The upstream's refs, when the in-process request read a clean advertisement (git need not list them). */
  readonly listing: RemoteListing | undefined;
}

export interface PrepareRemoteOptions {
  /** Sent as an `Authorization` header to http(s) upstreams, only to origins `tokenAllowed` accepts. */
  token?: string;
  /**
   * Whether the token may go to `url` (the upstream, or a redirect's target);
   * default: only the upstream URL's own origin. A redirect to an origin it
   * refuses fails the preparation (CredentialRedirectError).
   */
  tokenAllowed?: (url: URL) => boolean;
  signal?: AbortSignal;
  /** Time limit of the lookups and requests (default: the runner's). */
  timeoutMs?: number;
}

/** What a prepared remote lets its git process do, kept out of the (visible) remote object. */
interface Grant {
  token?: string;
  tokenScope?: string;
  curlResolve: string[];
  sshPin?: SshPin;
}

export interface GitRunOptions {
  /** Working directory (default: the OS temp directory, never the caller's cwd). */
  cwd?: string;
  /** Kills the whole git process group with SIGKILL when it fires. */
  signal?: AbortSignal;
  timeoutMs?: number;
  /**
   * The upstream this command talks to, from {@link GitRunner.prepareRemote}; its
   * URL must follow `--end-of-options`. Only then may git use a network
   * transport (that remote's only), connections pinned to the checked
   * addresses, the token (if any) limited to the remote's origin.
   */
  remote?: PreparedRemote;
  /** Receives stderr line by line (progress meters split on `\r`), redacted. */
  onStderrLine?: (line: string) => void;
  /** Written to stdin, which is otherwise closed. */
  input?: string;
  /** `GIT_INDEX_FILE`: an index of the caller's own, so exports never touch a mirror's files. */
  indexFile?: string;
}

export type { GitProcess, GitRunResult };

/**
 * The one hardened way forgesync runs git: an argument vector (never a shell), an
 * environment built from scratch (see `buildGitEnv`), its own process group killed
 * as a whole on abort or timeout, bounded output, redacted errors.
 */
export class GitRunner {
  readonly protocols: ReadonlySet<string>;
  readonly defaultTimeoutMs: number;
  readonly gitBinary: string;
  readonly maxStdoutBytes: number;
  readonly fsckObjects: boolean;
  readonly egress: EgressPolicy;
  readonly dataDir: string | undefined;
  /** The allowed protocols git may use without a prepared remote: local ones only. */
  readonly #local: ReadonlySet<string>;
  readonly #ssh: SshSettings;
  #knownHostsReady = false;
  /** The remotes this runner prepared, with what each lets git do. */
  readonly #grants = new WeakMap<PreparedRemote, Grant>();

  constructor(options: GitRunnerOptions) {
    for (const protocol of options.protocols) {
      if (!KNOWN_PROTOCOLS.has(protocol)) throw new InvalidGitProtocolError(`unknown git protocol ${JSON.stringify(protocol)}`);
    }
    this.protocols = new Set(options.protocols);
    this.defaultTimeoutMs = positive(options.defaultTimeoutMs ?? DEFAULT_GIT_TIMEOUT_MS, 'defaultTimeoutMs');
    this.gitBinary = options.gitBinary ?? 'git';
    this.maxStdoutBytes = positive(options.maxStdoutBytes ?? DEFAULT_MAX_STDOUT_BYTES, 'maxStdoutBytes');
    this.fsckObjects = options.fsckObjects ?? false;
    this.egress = options.egress ?? new EgressPolicy();
    this.dataDir = options.dataDir;
    this.#local = new Set([...this.protocols].filter((protocol) => protocol === 'file'));
    this.#ssh = {
      knownHostsFile: options.dataDir === undefined ? undefined : join(options.dataDir, 'ssh', 'known_hosts'),
      keyFile: options.sshKeyFile,
      agent: options.sshAgent ?? false,
    };
    killGitOnExit();
  }

  /**
   * Makes `url` ready for a git command that talks to it — the one way in
   * which any git network call starts (the mirror sync and the snapshots'
   * temporary clone alike): the URL is validated; its host resolved once and
   * every address checked against the egress policy; for http(s), redirects
   * resolved here hop by hop (each hop checked, the token sent only where
   * `tokenAllowed` says) so that git, which never follows one, is given the
   * URL it would have ended on; and the connection pinned to the checked
   * addresses (`http.curloptResolve`, ssh `HostName`). A local repository
   * needs no lookup at all.
   * @throws InvalidRemoteUrlError; EgressRefusedError (nothing was sent to a refused
   *   address); EgressLookupError; CredentialRedirectError; GitTimeoutError; GitAbortedError.
   */
  async prepareRemote(url: string, options: PrepareRemoteOptions = {}): Promise<PreparedRemote> {
    const requested = validateRemoteUrl(url, this.protocols);
    const { token, signal } = options;
    checkToken(token);
    const target = remoteTarget(requested);
    if (!target) return this.#grant({ url: requested, requested, protocol: 'file', target: undefined, listing: undefined }, { curlResolve: [] });
    const command = `connect to ${target.host}`;
    if (signal?.aborted) throw new GitAbortedError(command, signal.reason);
    const timeoutMs = positive(options.timeoutMs ?? this.defaultTimeoutMs, 'timeoutMs');
    const limits = { ...(signal ? { signal } : {}), timeoutMs };
    try {
      if (target.protocol === 'ssh') {
        this.#ensureKnownHosts();
        const resolved = await this.egress.resolve(target.host, limits);
        // ssh takes one HostName: the first checked address, in the resolver's order.
        const sshPin = { host: target.host, port: target.port, address: resolved.addresses[0]!.address };
        return this.#grant({ url: requested, requested, protocol: 'ssh', target: resolved, listing: undefined }, { curlResolve: [], sshPin });
      }
      if (target.protocol === 'git') {
        // git:// cannot be pinned: git-daemon connections are opened by git itself after its
        // own getaddrinfo (no curl to hand addresses to, no ssh option). The name is checked
        // here, but a DNS answer that changes between this check and git's lookup (rebinding)
        // is not caught. Allow git:// (FORGESYNC_GIT_PROTOCOLS) only for hosts whose DNS you trust.
        const resolved = await this.egress.resolve(target.host, limits);
        return this.#grant({ url: requested, requested, protocol: 'git', target: resolved, listing: undefined }, { curlResolve: [] });
      }
      const origin = new URL(requested);
      const tokenAllowed = options.tokenAllowed ?? ((other: URL) => other.origin === origin.origin);
      if (token !== undefined && !tokenAllowed(origin)) {
        throw new InvalidGitOptionError(`the token is not meant for ${origin.host}; refusing to send it there`);
      }
      const resolved = await resolveHttpRemote(this, requested, { ...limits, ...(token !== undefined ? { token } : {}), tokenAllowed });
      const final = new URL(resolved.url);
      const port = final.port === '' ? (final.protocol === 'https:' ? 443 : 80) : Number(final.port);
      // An address literal is its own resolution; a name is pinned to what was checked.
      const curlResolve = addressLiteral(final.hostname) ? [] : [curlResolveEntry(resolved.target.host, port, resolved.target.addresses)];
      const scope = tokenScopeFor(resolved.url);
      const grant: Grant = { curlResolve, ...(token !== undefined ? { token, ...(scope ? { tokenScope: scope } : {}) } : {}) };
      const protocol = final.protocol === 'https:' ? 'https' : 'http';
      return this.#grant({ url: resolved.url, requested, protocol, target: resolved.target, listing: resolved.listing }, grant);
    } catch (error) {
      if (signal?.aborted && !(error instanceof GitError)) throw new GitAbortedError(command, signal.reason);
      throw error;
    }
  }

  /**
   * Runs `git <args>` and resolves with its output.
   * @throws GitCommandError on a non-zero exit; GitTimeoutError; GitAbortedError; GitOutputLimitError.
   */
  async run(args: string[], options: GitRunOptions = {}): Promise<GitRunResult> {
    const { signal } = options;
    const grant = options.remote ? this.#grantFor(options.remote, args) : undefined;
    const token = grant?.token;
    const redact = makeRedactor(token);
    checkArgs(args, token);
    const command = summarize(args, redact);
    const timeoutMs = positive(options.timeoutMs ?? this.defaultTimeoutMs, 'timeoutMs');
    if (signal?.aborted) throw new GitAbortedError(command, signal.reason);
    const env = this.#env(options, grant);
    return runGitProcess({
      binary: this.gitBinary,
      args,
      cwd: options.cwd,
      env,
      command,
      redact,
      timeoutMs,
      maxStdoutBytes: this.maxStdoutBytes,
      ...(signal ? { signal } : {}),
      ...(options.input !== undefined ? { input: options.input } : {}),
      ...(options.onStderrLine ? { onStderrLine: options.onStderrLine } : {}),
    });
  }

  /**
   * Starts `git <args>` as a long-lived process (e.g. `cat-file --batch-command`)
   * with the same environment and process-group handling as {@link run}; stdin
   * and stdout are pipes the caller speaks the protocol over.
   */
  start(args: string[], options: Pick<GitRunOptions, 'cwd'> & { gitProtocol?: string; timeoutMs?: number } = {}): GitProcess {
    checkArgs(args);
    const env = this.#env({}, undefined);
    if (options.gitProtocol !== undefined) {
      // What a client asked for in its Git-Protocol header (serving: `version=2`), passed to upload-pack as git-http-backend does.
      if (!/^[A-Za-z0-9=:._-]{1,100}$/.test(options.gitProtocol)) throw new InvalidGitOptionError('GIT_PROTOCOL may hold only letters, digits and = : . _ -');
      env.GIT_PROTOCOL = options.gitProtocol;
    }
    return startGitProcess({ binary: this.gitBinary, args, cwd: options.cwd, env, ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) });
  }

  /** Registers a remote this runner prepared (frozen: nothing about it changes after the checks). */
  #grant(remote: PreparedRemote, grant: Grant): PreparedRemote {
    const frozen = Object.freeze({ ...remote });
    this.#grants.set(frozen, grant);
    return frozen;
  }

  /**
   * What `remote` lets this command do, after checking that this runner
   * prepared it, that its URL is the repository the command names (right
   * after `--end-of-options`), and that no `-c`/`--config` can change what
   * the environment set (redirects, proxies, URL rewriting).
   */
  #grantFor(remote: PreparedRemote, args: string[]): Grant {
    const grant = this.#grants.get(remote);
    if (!grant) throw new InvalidGitOptionError('the remote was not prepared by this runner: get it from runner.prepareRemote(url)');
    const end = args.indexOf('--end-of-options');
    if (end === -1 || args[end + 1] !== remote.url) throw new InvalidGitOptionError('the prepared remote\'s URL must follow --end-of-options');
    if (args.slice(0, end).some((arg) => arg === '-c' || /^(-c.|--config)/.test(arg))) {
      throw new InvalidGitOptionError('git commands that use the network take their configuration from the runner only (no -c, --config)');
    }
    return grant;
  }

  /** forgesync's known_hosts, created 0600 in a 0700 directory on first use; a symlink or non-file is refused. */
  #ensureKnownHosts(): void {
    const file = this.#ssh.knownHostsFile;
    if (this.#knownHostsReady) return;
    if (file === undefined) throw new InvalidGitOptionError('ssh upstreams need forgesync\'s own known_hosts: open the runner with a dataDir');
    for (const path of [file, this.#ssh.keyFile]) {
      const problem = path === undefined ? undefined : sshPathProblem(path);
      if (problem) throw new InvalidGitOptionError(problem);
    }
    mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 });
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_NOFOLLOW, 0o600);
    try {
      const info = fstatSync(fd);
      if (!info.isFile()) throw new InvalidGitOptionError(`${file} is not a regular file`);
      if ((info.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
    } finally {
      closeSync(fd);
    }
    this.#knownHostsReady = true;
  }

  #env(options: GitRunOptions, grant: Grant | undefined): NodeJS.ProcessEnv {
    // Without a prepared remote git may use no network transport at all; with one, only its own.
    const protocols = grant && options.remote ? new Set([options.remote.protocol]) : this.#local;
    const env = buildGitEnv({
      protocols,
      fsckObjects: this.fsckObjects,
      ssh: this.#ssh,
      ...(grant?.token !== undefined ? { token: grant.token } : {}),
      ...(grant?.tokenScope !== undefined ? { tokenScope: grant.tokenScope } : {}),
      ...(grant?.curlResolve.length ? { curlResolve: grant.curlResolve } : {}),
      ...(grant?.sshPin ? { sshPin: grant.sshPin } : {}),
    });
    if (options.indexFile !== undefined) {
      if (!isAbsolute(options.indexFile)) throw new InvalidGitOptionError('indexFile must be an absolute path');
      env.GIT_INDEX_FILE = options.indexFile;
    }
    return env;
  }
}

/** Arguments are strings without NUL bytes, and never carry the access token. */
function checkArgs(args: string[], token?: string): void {
  for (const arg of args) {
    if (typeof arg !== 'string' || arg.includes('\0')) throw new InvalidGitOptionError('git arguments must be strings without NUL bytes');
    if (token && arg.includes(token)) throw new InvalidGitOptionError('refusing to pass the access token on the command line');
  }
}

function positive(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0) throw new InvalidGitOptionError(`${name} must be a positive number, got ${value}`);
  return value;
}

/** `git <args>` for messages: redacted, each argument shortened, the whole capped. */
function summarize(args: string[], redact: (text: string) => string): string {
  const shown = args.map((arg) => (arg.length > 120 ? `${arg.slice(0, 117)}…` : arg)).join(' ');
  const text = redact(`git ${shown}`);
  return text.length > 400 ? `${text.slice(0, 399)}…` : text;
}
