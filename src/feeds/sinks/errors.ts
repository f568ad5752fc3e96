import { pathToFileURL } from 'node:url';
import { InvalidInputError } from '../../errors.js';

/**
 * A sink URL forgesync cannot use: an unknown scheme, a malformed URL, a
 * credential in the URL, a bad NATS subject or file path. The message says
 * what to write instead and never repeats a secret (the URL is shown redacted).
 */
export class UnsupportedSinkUrlError extends InvalidInputError {
  constructor(
    /** The URL as it may be shown: credentials and token-like parameters replaced by `***`. */
    readonly url: string,
    detail: string,
  ) {
    super(`sink URL ${url} cannot be used: ${detail}`);
  }
}

/** A file sink's directory is not inside the feed file root, as written or through a symbolic link. */
export class FileSinkOutsideRootError extends UnsupportedSinkUrlError {
  constructor(
    url: string,
    /** The feed file root (FORGESYNC_FEED_FILE_ROOT). */
    readonly root: string,
  ) {
    super(
      url,
      `a file sink writes only inside the feed file root ${root} (FORGESYNC_FEED_FILE_ROOT), and this directory is not inside it ` +
        `(symbolic links leading out of it are refused too); use ${pathToFileURL(root).href.replace(/\/$/, '')}/<directory>`,
    );
  }
}

/** The signing secret or token given for a sink cannot be used (empty, or a `whsec_` secret that is not base64). */
export class InvalidSinkSecretError extends InvalidInputError {}

/** A sink option (batch size, timeout, file size) is out of range. */
export class InvalidSinkOptionError extends InvalidInputError {}
