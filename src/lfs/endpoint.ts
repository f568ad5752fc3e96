import type { GitRunner } from '../git/runner.js';

/**
 * Where a source's LFS objects are asked for, as git-lfs finds it: `lfs.url`
 * of the `.lfsconfig` committed at the mirror's HEAD, else the remote URL
 * with `.git/info/lfs` (`/info/lfs` when it already ends in `.git`). An ssh
 * remote (`git@host:org/repo.git`, `ssh://host/…`) has its LFS server on
 * https at the same host and path, as git-lfs derives it (its ssh
 * `git-lfs-authenticate` handshake is not spoken: the source's credential
 * goes over https instead, where it is bound there). A local upstream has
 * none unless `.lfsconfig` names one.
 */
export async function lfsEndpoint(runner: GitRunner, mirror: string, upstream: string, signal: AbortSignal): Promise<URL | undefined> {
  const configured = await lfsConfigUrl(runner, mirror, signal);
  return configured ?? defaultEndpoint(upstream);
}

/** `lfs.url` of the `.lfsconfig` at HEAD, when there is one and it is an http(s) URL. */
async function lfsConfigUrl(runner: GitRunner, mirror: string, signal: AbortSignal): Promise<URL | undefined> {
  let value: string;
  try {
    // No such file or no such key: git exits non-zero, and the default applies.
    value = (await runner.run([`--git-dir=${mirror}`, 'config', '--blob', 'HEAD:.lfsconfig', '--get', 'lfs.url'], { signal })).stdout.trim();
  } catch {
    signal.throwIfAborted();
    return undefined;
  }
  return httpUrl(value);
}

/** The endpoint git-lfs derives from a remote URL; undefined for a local path or another scheme. */
export function defaultEndpoint(upstream: string): URL | undefined {
  const scp = /^(?:[^@/:]+@)?([^/:]+):(?!\/)(.+)$/.exec(upstream);
  let url: URL | undefined;
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(upstream)) url = httpUrl(`https://${scp[1]}/${scp[2]}`);
  else if (/^ssh:\/\//i.test(upstream)) url = httpUrl(`https://${upstream.slice('ssh://'.length).replace(/^[^@/]*@/, '').replace(/^([^/:]+):\d+/, '$1')}`);
  else url = httpUrl(upstream);
  if (!url) return undefined;
  url.search = '';
  url.hash = '';
  const path = url.pathname.replace(/\/+$/, '');
  url.pathname = `${path}${path.endsWith('.git') ? '' : '.git'}/info/lfs`;
  return url;
}

/** `value` as an http(s) URL without user name or password (a credential is sent as a header, and only where bound). */
function httpUrl(value: string): URL | undefined {
  try {
    const url = new URL(value);
    url.username = '';
    url.password = '';
    return url.protocol === 'https:' || url.protocol === 'http:' ? url : undefined;
  } catch {
    return undefined;
  }
}
