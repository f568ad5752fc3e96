import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redactUrl } from '../../util/redact.js';
import { UnsupportedSinkUrlError } from './errors.js';

/** The schemes a sink URL may have, and what each looks like (for messages). */
export const SINK_SCHEMES = ['http', 'https', 'nats', 'file'] as const;
export type SinkScheme = (typeof SINK_SCHEMES)[number];

/** The port of a NATS sink URL without one (the NATS client's default). */
export const NATS_DEFAULT_PORT = 4222;

const SUPPORTED = 'http://…, https://… (a webhook), nats://host[:port]/<subject> (JetStream) or file:///<absolute directory>';
const SCHEME = /^([a-z][a-z0-9+.-]*):/i;
/** What a NATS subject may not hold: whitespace and control characters (the protocol's separators), and the wildcards `*` and `>`. */
const SUBJECT_FORBIDDEN = /[\s\u0000-\u001f\u007f*>]/;

/**
 * `url` with what may be a secret replaced by `***`, for logs, status and
 * errors: the whole user info (`https://user:pw@h/` → `https://***@h/`; a
 * user name alone may be a token) and the values of token-like query
 * parameters (`?token=`, `?sig=`, `?api_key=`…). A string that is not a URL
 * comes back with everything up to its last `@` hidden.
 */
export function redactSinkUrl(url: string): string {
  if (typeof url !== 'string') return '';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return redactUrl(url);
  }
  if (parsed.username || parsed.password) {
    // redactUrl keeps a user name next to a password; a sink URL shows neither.
    parsed.password = '';
    parsed.username = '***';
  }
  return redactUrl(parsed.href);
}

/**
 * Checks a sink URL without touching the network or the disk, so the CLI can
 * refuse it before anything is stored: a known scheme, a well-formed URL, no
 * user name or password (a sink's secret comes only from the feed secret the
 * feed names with --secret, defined by the operator, so it is never stored
 * with the feed or shown with its URL), a NATS URL with a valid subject, a
 * file URL naming an absolute directory on this machine (that it is inside
 * the feed file root is checked by file-root.ts).
 * @throws UnsupportedSinkUrlError
 */
export function validateSinkUrl(url: string): URL {
  if (typeof url !== 'string' || url.trim() === '') throw new UnsupportedSinkUrlError('""', `the URL is empty; expected ${SUPPORTED}`);
  const shownUrl = redactSinkUrl(url).slice(0, 200);
  const scheme = SCHEME.exec(url)?.[1]?.toLowerCase();
  if (!scheme || !(SINK_SCHEMES as readonly string[]).includes(scheme)) {
    throw new UnsupportedSinkUrlError(shownUrl, `${scheme ? `the scheme "${scheme}" is not supported` : 'it has no scheme'}; expected ${SUPPORTED}`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnsupportedSinkUrlError(shownUrl, `it is not a well-formed URL; expected ${SUPPORTED}`);
  }
  if (parsed.username || parsed.password) {
    throw new UnsupportedSinkUrlError(
      shownUrl,
      'it carries a user name or password; remove them from the URL and have the operator define the secret (the webhook signing secret, ' +
        'the NATS token) as a feed secret bound to this host, named with --secret, so that it is never stored with the feed or shown with its URL',
    );
  }
  if (scheme === 'nats') natsSubjectOf(parsed, shownUrl);
  if (scheme === 'file') fileDirectoryOf(parsed, url, shownUrl);
  if ((scheme === 'http' || scheme === 'https') && parsed.hostname === '') throw new UnsupportedSinkUrlError(shownUrl, 'it names no host');
  return parsed;
}

/**
 * The URL a feed secret's host binding is checked against: the sink's, a
 * NATS one with its port written out, so that only a binding naming the
 * port matches it (a binding without a port means a web scheme's default
 * port, as for credentials; NATS has none of those).
 */
export function secretTargetOf(url: URL): URL {
  const target = new URL(url.href);
  if (target.protocol === 'nats:' && target.port === '') target.port = String(NATS_DEFAULT_PORT);
  return target;
}

/**
 * The subject of `nats://host[:port]/<subject>`: the path without its
 * leading slash, percent-decoded; dot-separated tokens, none empty, no
 * whitespace, no wildcard (a publish goes to one subject).
 * @throws UnsupportedSinkUrlError
 */
export function natsSubjectOf(url: URL, shownUrl = redactSinkUrl(url.href)): string {
  const fail = (detail: string): never => {
    throw new UnsupportedSinkUrlError(shownUrl, `${detail}; expected nats://host[:port]/<subject>, e.g. nats://nats.internal:4222/forgesync.changes`);
  };
  if (url.hostname === '') fail('it names no host');
  if (url.search !== '' || url.hash !== '') fail('a NATS sink URL takes no query or fragment');
  let subject = '';
  try {
    subject = decodeURIComponent(url.pathname.replace(/^\//, ''));
  } catch {
    fail('its subject is not valid percent-encoding');
  }
  if (subject === '') fail('it names no subject');
  if (SUBJECT_FORBIDDEN.test(subject)) fail(`the subject ${JSON.stringify(subject.slice(0, 80))} contains whitespace, a control character or a wildcard (* or >), which a publish subject cannot have`);
  if (subject.split('.').some((token) => token === '')) fail(`the subject ${JSON.stringify(subject.slice(0, 80))} has an empty token (a leading, trailing or doubled dot)`);
  return subject;
}

/**
 * The directory of `file:///abs/dir` (or `file://localhost/abs/dir`, or
 * `file:/abs/dir`). `raw` is the URL as written: the URL parser makes every
 * file path absolute (`file:out` → `/out`), so a relative one is caught there.
 * @throws UnsupportedSinkUrlError
 */
export function fileDirectoryOf(url: URL, raw = url.href, shownUrl = redactSinkUrl(url.href)): string {
  const fail = (detail: string): never => {
    throw new UnsupportedSinkUrlError(shownUrl, `${detail}; expected file:///<absolute directory>, e.g. file:///var/lib/forgesync/feed-out`);
  };
  if (url.hostname !== '' && url.hostname !== 'localhost') fail(`it names the host "${url.hostname.slice(0, 80)}"; a file sink writes to a directory of this machine`);
  if (!/^file:(\/\/[^/?#]*)?\//i.test(raw.trim())) fail('its path is not absolute');
  if (url.search !== '' || url.hash !== '') fail('a file sink URL takes no query or fragment');
  let directory = '';
  try {
    directory = fileURLToPath(url);
  } catch (error) {
    fail(`its path cannot be a file path (${(error as Error).message})`);
  }
  if (!isAbsolute(directory)) fail('its path is not absolute');
  return directory;
}
