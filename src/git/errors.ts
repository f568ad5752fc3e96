import { ForgesyncError, InvalidInputError, NotFoundError } from '../errors.js';
import { redactUrl } from '../util/redact.js';

/** Base class of the errors of a git process that ran (and failed, timed out or was stopped). */
export class GitError extends ForgesyncError {}

/** Last non-empty line of a (redacted) stderr tail, for one-line messages. */
function lastLines(stderr: string, count = 3): string {
  const lines = stderr
    .split(/\r\n|\r|\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !/^(Please make sure|and the repository exists)/.test(line));
  return lines.slice(-count).join(' | ');
}

/**
 * A git process exited with a non-zero status (or was killed by a signal it did
 * not expect). `command` and `stderr` are already redacted: no token, no
 * `Authorization:` header, no URL password.
 */
export class GitCommandError extends GitError {
  constructor(
    /** `git <args>` with secrets removed. */
    readonly command: string,
    /** Exit code, or null when the process died from a signal. */
    readonly exitCode: number | null,
    /** The last few KiB of stderr, redacted. */
    readonly stderr: string,
    readonly signal: string | null = null,
  ) {
    const status = exitCode === null ? `was killed by ${signal ?? 'a signal'}` : `failed with exit code ${exitCode}`;
    const detail = lastLines(stderr);
    super(`${command} ${status}${detail ? `: ${detail}` : ''}`);
  }
}

/** A git process ran longer than its time limit and was killed. */
export class GitTimeoutError extends GitError {
  constructor(readonly command: string, readonly timeoutMs: number) {
    super(`${command} did not finish within ${timeoutMs} ms and was killed; raise the timeout if the repository is large`);
  }
}

/** A git process was killed because the caller's abort signal fired (e.g. the lease was lost). */
export class GitAbortedError extends GitError {
  constructor(readonly command: string, reason?: unknown) {
    const why = reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : undefined;
    super(`${command} was aborted${why ? `: ${why}` : ''}`, reason === undefined ? undefined : { cause: reason });
  }
}

/** A git process wrote more to stdout than the runner accepts. */
export class GitOutputLimitError extends GitError {
  constructor(readonly command: string, readonly limitBytes: number) {
    super(`${command} wrote more than ${limitBytes} bytes to stdout and was killed`);
  }
}

/** A remote URL is malformed, dangerous or uses a protocol that is not allowed. */
export class InvalidRemoteUrlError extends InvalidInputError {
  /** The offending URL with any credentials replaced by `***`. */
  readonly url: string;
  constructor(url: string, reason: string) {
    const cut = url.length > 200 ? `${url.slice(0, 200)}…` : url;
    // redactUrl covers scheme://user:pw@…; this covers scp-like user:pw@host:path.
    const shown = redactUrl(cut).replace(/^([^:@/]*):[^@/]*@/, '$1:***@');
    super(`invalid remote URL ${JSON.stringify(shown)}: ${reason}`);
    this.url = shown;
  }
}

/** FORGESYNC_GIT_PROTOCOLS (or the equivalent setting) names an unknown protocol. */
export class InvalidGitProtocolError extends InvalidInputError {}

/** A token or another git option is unusable (e.g. contains a newline). */
export class InvalidGitOptionError extends InvalidInputError {}

/** A path derived from a name or URL would land outside its root directory. */
export class PathEscapeError extends InvalidInputError {
  constructor(readonly root: string, readonly path: string, reason = 'it is not strictly inside the root') {
    super(`refusing path ${JSON.stringify(path)} under ${JSON.stringify(root)}: ${reason}`);
  }
}

/** The upstream repository does not exist, is gone, or is invisible with the given credentials. */
export class RemoteNotFoundError extends NotFoundError {
  /** The URL with any credentials replaced by `***`. */
  readonly url: string;
  constructor(url: string, cause?: GitCommandError) {
    const shown = redactUrl(url);
    const detail = cause ? lastLines(cause.stderr, 1) : '';
    super(
      `upstream repository ${shown} was not found (it does not exist, was deleted or renamed, ` +
        `or the credential cannot see it)${detail ? `: ${detail}` : ''}`,
      cause ? { cause } : undefined,
    );
    this.url = shown;
  }
}

const NOT_FOUND_PATTERNS: RegExp[] = [
  /repository not found/i,
  /does not appear to be a git repository/i,
  /repository '.*' not found/i,
  /repository '.*' does not exist/i,
  /the requested url returned error: 404/i,
  /could not be found or you don't have permission/i,
  /no such file or directory/i,
  /project .* not found/i,
];

/** True when a failed ls-remote/clone/fetch says the upstream repository is missing. */
export function isRemoteNotFound(error: unknown): error is GitCommandError {
  return error instanceof GitCommandError && NOT_FOUND_PATTERNS.some((pattern) => pattern.test(error.stderr));
}
