/**
 * The URLs records are named and referenced by in a migration archive.
 * Every record has a `url`, and a record points at another by that URL
 * (an issue comment's `issue` is the issue's `url`), never by id. They are
 * the web URLs GitHub shows, in the forms GitHub's exporter writes:
 *
 * | record                      | url                                                  |
 * |-----------------------------|------------------------------------------------------|
 * | user, organization          | `<web>/<login>`                                      |
 * | team                        | `<web>/orgs/<org>/teams/<slug>`                      |
 * | repository                  | `<web>/<owner>/<repo>` (`<repo url>` below)          |
 * | issue / pull request        | `<repo url>/issues/<n>` / `<repo url>/pull/<n>`      |
 * | issue comment               | `<issue or pull url>#issuecomment-<id>`              |
 * | issue event                 | `<issue or pull url>#event-<id>`                     |
 * | pull request review         | `<pull url>/files#pullrequestreview-<id>`            |
 * | review comment              | `<pull url>/files#r<id>`                             |
 * | review thread               | `<pull url>/files#pullrequestreviewthread-<id>`      |
 * | milestone                   | `<repo url>/milestones/<number>`                     |
 * | label                       | `<repo url>/labels/<name, URL-encoded>`              |
 * | release                     | `<repo url>/releases/tag/<tag>`                      |
 * | protected branch            | `<repo url>/protected_branches/<branch>`             |
 *
 * Built from numbers, ids and names rather than copied from GitHub's
 * `html_url`s (those say `/milestone/1` and `#discussion_r1`), so that every
 * reference matches the record it names byte for byte.
 */
export class ArchiveUrls {
  /** `https://github.com`, or a GitHub Enterprise host's web root. */
  readonly web: string;
  readonly owner: string;
  readonly repo: string;
  readonly repository: string;

  constructor(web: string, owner: string, repo: string) {
    this.web = web.replace(/\/+$/, '');
    this.owner = owner;
    this.repo = repo;
    this.repository = `${this.web}/${owner}/${repo}`;
  }

  user(login: string): string {
    return `${this.web}/${login}`;
  }

  team(org: string, slug: string): string {
    return `${this.web}/orgs/${org}/teams/${slug}`;
  }

  /** Another repository on the same host (a fork a pull request came from). */
  otherRepository(fullName: string): string {
    return `${this.web}/${fullName}`;
  }

  issue(number: number): string {
    return `${this.repository}/issues/${number}`;
  }

  pull(number: number): string {
    return `${this.repository}/pull/${number}`;
  }

  issueComment(parent: string, id: number | string): string {
    return `${parent}#issuecomment-${id}`;
  }

  event(parent: string, id: number | string): string {
    return `${parent}#event-${id}`;
  }

  review(number: number, id: number | string): string {
    return `${this.pull(number)}/files#pullrequestreview-${id}`;
  }

  reviewComment(number: number, id: number | string): string {
    return `${this.pull(number)}/files#r${id}`;
  }

  reviewThread(number: number, id: number | string): string {
    return `${this.pull(number)}/files#pullrequestreviewthread-${id}`;
  }

  milestone(number: number): string {
    return `${this.repository}/milestones/${number}`;
  }

  label(name: string): string {
    return `${this.repository}/labels/${encodeURIComponent(name)}`;
  }

  release(tag: string): string {
    return `${this.repository}/releases/tag/${encodePath(tag)}`;
  }

  protectedBranch(name: string): string {
    return `${this.repository}/protected_branches/${encodePath(name)}`;
  }
}

/** Encodes each `/`-separated part (tags and branches may hold slashes, which stay). */
function encodePath(value: string): string {
  return value.split('/').map(encodeURIComponent).join('/');
}

/**
 * The web root of a GitHub host, from a repository's `html_url`
 * (`https://ghe.example.com/acme/widgets` → `https://ghe.example.com`), or
 * failing that from the import's API URL (`https://api.github.com` →
 * `https://github.com`, `https://ghe.example.com/api/v3` → `https://ghe.example.com`).
 */
export function webRoot(htmlUrl: unknown, apiUrl: string): string {
  if (typeof htmlUrl === 'string') {
    try {
      const url = new URL(htmlUrl);
      const parts = url.pathname.split('/').filter(Boolean);
      if (parts.length >= 2) return `${url.origin}${parts.length > 2 ? `/${parts.slice(0, -2).join('/')}` : ''}`;
    } catch {
      // not a URL: fall back to the API URL
    }
  }
  const api = new URL(apiUrl);
  if (api.hostname === 'api.github.com') return 'https://github.com';
  if (api.hostname.startsWith('api.') && !api.pathname.replace(/\/+$/, '')) return `${api.protocol}//${api.hostname.slice(4)}${api.port ? `:${api.port}` : ''}`;
  return `${api.origin}${api.pathname.replace(/\/+$/, '').replace(/\/api\/v3$/, '')}`;
}

/**
 * The repository a REST API URL points into (`https://api.github.com/repos/acme/widgets/commits/…`
 * → `acme/widgets`), or undefined.
 */
export function repositoryOfApiUrl(apiUrl: unknown): string | undefined {
  if (typeof apiUrl !== 'string') return undefined;
  const match = /\/repos\/([^/]+)\/([^/]+)(?:\/|$)/.exec(apiUrl);
  return match ? `${match[1]}/${match[2]}` : undefined;
}
