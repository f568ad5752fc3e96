/**
 * A fake GitHub Enterprise for the importer's tests and benchmarks: REST v3 at
 * `<api origin>/api/v3`, the web host (html_url, attachments, release
 * downloads, git smart-HTTP) at a second origin, and a "foreign" origin whose
 * links the importer must not follow. Answers carry GitHub's headers (rate
 * limits, ETag, request id, media type), paginate with GitHub's Link header,
 * enforce primary and secondary rate limits, and take injected faults.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GitHttpServer } from '../support/git-http-server.js';
import { FakeAppInstallations, type FakeAppOptions } from './app-auth.js';
import { GitRepos } from './git.js';
import { drip, hostileMatch, sendLargePage, type HostileOptions } from './hostile.js';
import { RateLimiter, type RateState } from './limits.js';
import { Payloads } from './payloads.js';
import type { Expected, FakeProject } from './project.js';
import { Routes, type Answer, type Route } from './routes.js';
import { classifyWeb, WebHost } from './web.js';
import { smallProject } from './generate.js';

/** `text`: the body as written, for answers JSON.stringify cannot make (invalid or very deep JSON); else `body` as JSON. */
export type Fault = '502' | '500' | 'secondary' | 'rate-limit-403' | 'rate-limit-429' | 'reset' | { delayMs: number } | { status: number; body?: unknown; text?: string; headers?: Record<string, string> };

export interface RequestInfo {
  host: 'api' | 'web' | 'foreign';
  method: string;
  /** The full request path (API paths include `/api/v3`). */
  path: string;
  /** The query string without `?`. */
  query: string;
  pathKind: string;
  tokenIndex: number;
  headers: IncomingMessage['headers'];
}

export interface LogEntry {
  host: 'api' | 'web' | 'foreign';
  method: string;
  path: string;
  query: string;
  pathKind: string;
  /** 0 until answered; -1 when the socket was reset. */
  status: number;
  /** Index into `tokens`, -1 for anonymous (or unknown) requests. */
  tokenIndex: number;
  /** An Authorization header came with the request (a valid token or not). */
  authorization: boolean;
  /** Counted against the primary rate limit. */
  counted: boolean;
  notModified: boolean;
  /** Fault injected into this request, if any. */
  fault?: string;
  /** Epoch ms of arrival. */
  at: number;
}

export interface Stats {
  total: number;
  counted: number;
  notModified: number;
  byStatus: Record<string, number>;
  byPathKind: Record<string, number>;
}

export interface InjectRule {
  /** A predicate, a substring of `path?query`, or a RegExp tested on `path?query`. */
  match: ((req: RequestInfo) => boolean) | string | RegExp;
  /** How many matching requests get the fault (default 1; Infinity for all). */
  times?: number;
  fault: Fault;
}

export interface FakeGitHubOptions {
  /** The project to serve (default `FakeProject.small()`); mutate it during a test to simulate upstream changes. */
  project?: FakeProject;
  /** Accepted tokens (`Authorization: token X` / `Bearer X`); default ['test-token']. */
  tokens?: string[];
  /** Primary limit per token (or per token index), default 5000. */
  limit?: number | number[];
  /** Anonymous (per client) limit, default 60. */
  anonLimit?: number;
  /** Length of a rate-limit window, default 3 600 000 ms. */
  windowMs?: number;
  /** Status of an exhausted primary limit: 403 (default) or 429. */
  exhaustedStatus?: 403 | 429;
  /** Secondary limit: more simultaneous requests per token than this answer 403 with retry-after (default unlimited). */
  maxConcurrent?: number;
  /** retry-after (seconds) of secondary-limit answers, default 60. */
  secondaryRetryAfterS?: number;
  /** Reset of injected rate-limit answers, ms from now (default 1000). */
  injectedResetInMs?: number;
  /** page × per_page above this on /issues/comments, /issues/events, /pulls/comments answers 422 (default 40 000). */
  pageCapItems?: number;
  /** Added before every answer (API and web); also settable later as `fake.latencyMs`. */
  latencyMs?: number;
  /** false: /rate_limit answers 404 "Rate limiting is not enabled." like some GHE servers. */
  rateLimitEndpoint?: boolean;
  /** GitHub refuses API requests without a User-Agent (403); default true. */
  requireUserAgent?: boolean;
  /** Create real repositories and serve git (default true). */
  git?: boolean;
  /** Git requests need `Basic x-access-token:<token>` (default false: a public repository). */
  requireGitAuth?: boolean;
  /** Link header URLs: `/repositories/<id>/…` as GitHub writes them (default) or `/repos/<owner>/<repo>/…`. */
  linkStyle?: 'repositories' | 'repos';
  /** `x-github-enterprise-version` header; null to omit (default '3.17.0'). */
  enterpriseVersion?: string | null;
  /**
   * Keep each answer's JSON once rendered (until the project changes), so a
   * benchmark measures its client, not how fast this single-threaded fake
   * builds payloads (GitHub's servers are many). Default false.
   */
  cacheResponses?: boolean;
  /**
   * Hostile: every list's Link header names this page as `last`, page 1 of
   * a one-page list included (`next` links stay true). Default null: the
   * true last page.
   */
  claimLastPage?: number | null;
  /** An API host that means harm: huge pages, drips, redirects to refused addresses (see hostile.ts). Default none. */
  hostile?: HostileOptions;
  /** A GitHub App whose installation tokens `POST {api}/app/installations/{id}/access_tokens` mints (see app-auth.ts); default none. */
  app?: FakeAppOptions | null;
}

const CAPPED_DOC = 'https://docs.github.com/v3/#pagination';
const RATE_DOC = 'https://docs.github.com/enterprise-server@3.17/rest/using-the-rest-api/rate-limits-for-the-rest-api';
const HTML_502 = '<html><body><h1>502 Bad Gateway</h1></body></html>';

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

function requestId(): string {
  const hex = randomBytes(10).toString('hex').toUpperCase();
  return `${hex.slice(0, 4)}:${hex.slice(4, 8)}:${hex.slice(8, 14)}:${hex.slice(14, 20)}:${Math.floor(Date.now() / 1000).toString(16).toUpperCase()}`;
}

export class FakeGitHub {
  readonly requests: LogEntry[] = [];
  /** Called on every request's arrival (before it is answered). */
  onRequest: ((entry: LogEntry) => void) | undefined;
  latencyMs: number;
  readonly apiUrl: string;
  readonly webUrl: string;
  readonly foreignUrl: string;
  readonly gitUrl: string;
  readonly wikiGitUrl: string;
  readonly limiter: RateLimiter;
  private readonly rules: (InjectRule & { left: number })[] = [];
  private readonly inFlight = new Map<number, number>();
  /** Rendered answers by URL and project version (cacheResponses). */
  private readonly rendered = new Map<string, { text: string; etag: string; extra: Record<string, string> }>();
  private readonly routes: Routes;
  private readonly web: WebHost;
  /** The App side (options.app): the JWTs it accepted and the tokens it minted. */
  readonly app: FakeAppInstallations | undefined;

  private constructor(
    readonly project: FakeProject,
    readonly payloads: Payloads,
    readonly options: Required<Omit<FakeGitHubOptions, 'project'>>,
    private readonly servers: Server[],
    private readonly gitServer: GitHttpServer | undefined,
    readonly gitRepos: GitRepos | undefined,
  ) {
    this.apiUrl = payloads.hosts.apiUrl;
    this.webUrl = payloads.hosts.webUrl;
    this.foreignUrl = payloads.hosts.foreignUrl;
    this.gitUrl = `${this.webUrl}/${project.repo.owner}/${project.repo.name}.git`;
    this.wikiGitUrl = `${this.webUrl}/${project.repo.owner}/${project.repo.name}.wiki.git`;
    this.app = options.app ? new FakeAppInstallations(options.app) : undefined;
    this.latencyMs = options.latencyMs;
    this.limiter = new RateLimiter({ limit: options.limit, anonLimit: options.anonLimit, windowMs: options.windowMs });
    this.routes = new Routes(project, payloads, { rateLimitEndpoint: options.rateLimitEndpoint, gitDir: gitRepos?.mainPath, rememberGit: options.cacheResponses });
    this.web = new WebHost({ project, payloads, gitPort: () => gitServer?.port, tokens: options.tokens, requireGitAuth: options.requireGitAuth });
  }

  static async start(options: FakeGitHubOptions = {}): Promise<FakeGitHub> {
    const project = options.project ?? smallProject();
    const settings: Required<Omit<FakeGitHubOptions, 'project'>> = {
      tokens: options.tokens ?? ['test-token'], limit: options.limit ?? 5000, anonLimit: options.anonLimit ?? 60, windowMs: options.windowMs ?? 3_600_000,
      exhaustedStatus: options.exhaustedStatus ?? 403, maxConcurrent: options.maxConcurrent ?? Number.POSITIVE_INFINITY, secondaryRetryAfterS: options.secondaryRetryAfterS ?? 60,
      injectedResetInMs: options.injectedResetInMs ?? 1000, pageCapItems: options.pageCapItems ?? 40_000, latencyMs: options.latencyMs ?? 0,
      rateLimitEndpoint: options.rateLimitEndpoint ?? true, requireUserAgent: options.requireUserAgent ?? true, git: options.git ?? true,
      requireGitAuth: options.requireGitAuth ?? false, linkStyle: options.linkStyle ?? 'repositories', enterpriseVersion: options.enterpriseVersion === undefined ? '3.17.0' : options.enterpriseVersion,
      cacheResponses: options.cacheResponses ?? false, claimLastPage: options.claimLastPage ?? null,
      hostile: options.hostile ?? {}, app: options.app ?? null,
    };
    let instance: FakeGitHub | undefined;
    const api = createServer((req, res) => void instance?.handleApi(req, res));
    const web = createServer((req, res) => void instance?.handleWeb(req, res, 'web'));
    const foreign = createServer((req, res) => void instance?.handleWeb(req, res, 'foreign'));
    const [apiPort, webPort, foreignPort] = await Promise.all([listen(api), listen(web), listen(foreign)]);
    const origin = `http://127.0.0.1:${apiPort}`;
    const payloads = new Payloads(project, { apiUrl: `${origin}/api/v3`, webUrl: `http://127.0.0.1:${webPort}`, uploadsUrl: `${origin}/api/uploads`, foreignUrl: `http://127.0.0.1:${foreignPort}` });
    let repos: GitRepos | undefined;
    let gitServer: GitHttpServer | undefined;
    if (settings.git) {
      repos = await GitRepos.create(project);
      gitServer = await GitHttpServer.start({ root: repos.root });
    }
    instance = new FakeGitHub(project, payloads, settings, [api, web, foreign], gitServer, repos);
    return instance;
  }

  // ---- controls --------------------------------------------------------

  inject(rule: InjectRule): { readonly left: number } {
    const entry = { ...rule, left: rule.times ?? 1 };
    this.rules.push(entry);
    return entry;
  }

  clearFaults(): void {
    this.rules.length = 0;
  }

  rate(tokenIndex: number): RateState {
    return this.limiter.state(tokenIndex);
  }

  exhaust(tokenIndex: number, resetInMs: number): void {
    this.limiter.exhaust(tokenIndex, resetInMs);
  }

  resetWindow(): void {
    this.limiter.resetAll();
  }

  clearLog(): void {
    this.requests.length = 0;
  }

  stats(): Stats {
    const stats: Stats = { total: 0, counted: 0, notModified: 0, byStatus: {}, byPathKind: {} };
    for (const entry of this.requests) {
      stats.total++;
      if (entry.counted) stats.counted++;
      if (entry.notModified) stats.notModified++;
      stats.byStatus[entry.status] = (stats.byStatus[entry.status] ?? 0) + 1;
      stats.byPathKind[entry.pathKind] = (stats.byPathKind[entry.pathKind] ?? 0) + 1;
    }
    return stats;
  }

  /** `project.expected()` plus the attachments' absolute URLs on this fake's web host. */
  expected(): Expected & { attachmentUrls: string[] } {
    const expected = this.project.expected();
    return { ...expected, attachmentUrls: expected.attachmentPaths.map((path) => `${this.webUrl}${path}`) };
  }

  budget(options: { perPage?: number } = {}): number {
    return this.project.budget(options);
  }

  /** A new commit on the default branch or the wiki, in the model and in git; resolves to its id. */
  async pushCommit(input: { repo: 'main' | 'wiki'; message: string; author?: string }): Promise<string> {
    const commit = this.project.recordPush(input.repo, input.message, input.author);
    return this.gitRepos ? this.gitRepos.writeCommit(input.repo, commit) : this.project.shaOf(commit.key);
  }

  /** Merges a pull request in the model (events, merged_by) and in git (merge commit, branch deleted). */
  async mergePull(number: number, by: string): Promise<string> {
    this.project.mergePull(number, by);
    const commit = this.project.mainHistory.at(-1);
    if (!commit) throw new Error('no merge commit');
    return this.gitRepos ? this.gitRepos.writeCommit('main', commit) : this.project.shaOf(commit.key);
  }

  async close(): Promise<void> {
    for (const server of this.servers) server.closeAllConnections();
    await Promise.all(this.servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    await this.gitServer?.close();
    await this.gitRepos?.close();
  }

  // ---- request handling -----------------------------------------------------

  private tokenOf(header: string | undefined): number | 'bad' {
    if (!header) return -1;
    const [scheme, value = ''] = header.split(/\s+/, 2);
    let token = value;
    if (/^basic$/i.test(scheme ?? '')) {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      token = decoded.slice(decoded.indexOf(':') + 1);
    } else if (!/^(token|bearer)$/i.test(scheme ?? '')) {
      return 'bad';
    }
    const index = this.options.tokens.indexOf(token);
    // An installation token past its expiry is refused like a revoked one, as GitHub does.
    return index === -1 || this.app?.expired(token) ? 'bad' : index;
  }

  private takeFault(info: RequestInfo): Fault | undefined {
    const target = info.query ? `${info.path}?${info.query}` : info.path;
    for (const rule of this.rules) {
      if (rule.left <= 0) continue;
      const { match } = rule;
      const hit = typeof match === 'string' ? target.includes(match) : match instanceof RegExp ? match.test(target) : match(info);
      if (hit) {
        rule.left--;
        return rule.fault;
      }
    }
    return undefined;
  }

  private rateHeaders(key: number): Record<string, string> {
    const state = this.limiter.state(key);
    return {
      'x-ratelimit-limit': String(state.limit), 'x-ratelimit-remaining': String(state.remaining), 'x-ratelimit-reset': String(state.reset),
      'x-ratelimit-used': String(state.used), 'x-ratelimit-resource': 'core',
    };
  }

  private baseHeaders(tokenIndex: number): Record<string, string> {
    const headers: Record<string, string> = {
      date: new Date().toUTCString(), server: 'GitHub.com', 'x-github-request-id': requestId(), 'x-github-media-type': 'github.v3; format=json',
      'x-github-api-version-selected': '2022-11-28', vary: 'Accept, Authorization, Cookie, X-GitHub-OTP, Accept-Encoding, Accept, X-Requested-With',
      'x-content-type-options': 'nosniff', 'x-frame-options': 'deny', 'access-control-allow-origin': '*',
      'access-control-expose-headers': 'ETag, Link, Location, Retry-After, X-GitHub-OTP, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Used, X-RateLimit-Resource, X-RateLimit-Reset, X-OAuth-Scopes, X-Accepted-OAuth-Scopes, X-Poll-Interval, X-GitHub-Media-Type, Deprecation, Sunset',
    };
    if (this.options.enterpriseVersion !== null) headers['x-github-enterprise-version'] = this.options.enterpriseVersion;
    if (tokenIndex >= 0) Object.assign(headers, { 'x-oauth-scopes': 'repo, read:org', 'x-accepted-oauth-scopes': 'repo' });
    return headers;
  }

  private sendJson(res: ServerResponse, entry: LogEntry, status: number, body: unknown, headers: Record<string, string>): void {
    const text = JSON.stringify(body);
    entry.status = status;
    res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)) });
    res.end(text);
  }

  private error(status: number, message: string, doc: string): Record<string, string> {
    return { message, documentation_url: doc, status: String(status) };
  }

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.resume();
    const url = new URL(req.url ?? '/', this.apiUrl);
    const prefix = new URL(this.apiUrl).pathname;
    const inner = url.pathname.startsWith(`${prefix}/`) || url.pathname === prefix ? url.pathname.slice(prefix.length) || '/' : undefined;
    const mintFor = req.method === 'POST' && this.app ? /^\/app\/installations\/([^/]+)\/access_tokens$/.exec(inner ?? '')?.[1] : undefined;
    if (mintFor !== undefined) return this.answerMint(req, res, url, mintFor);
    const route = inner === undefined ? undefined : this.routes.match(inner);
    const auth = this.tokenOf(req.headers.authorization);
    const tokenIndex = auth === 'bad' ? -1 : auth;
    const entry: LogEntry = { host: 'api', method: req.method ?? 'GET', path: url.pathname, query: url.search.slice(1), pathKind: route?.pathKind ?? 'unknown', status: 0, tokenIndex, authorization: req.headers.authorization !== undefined, counted: false, notModified: false, at: Date.now() };
    this.requests.push(entry);
    this.onRequest?.(entry);
    const info: RequestInfo = { host: 'api', method: entry.method, path: entry.path, query: entry.query, pathKind: entry.pathKind, tokenIndex, headers: req.headers };
    const fault = this.takeFault(info);
    if (fault !== undefined) entry.fault = typeof fault === 'string' ? fault : 'delayMs' in fault ? `delay ${fault.delayMs}` : `status ${fault.status}`;
    // Secondary limit: decided on arrival; rejected requests do not occupy a slot.
    const busy = this.inFlight.get(tokenIndex) ?? 0;
    const overConcurrency = busy >= this.options.maxConcurrent;
    if (!overConcurrency) this.inFlight.set(tokenIndex, busy + 1);
    try {
      await sleep(this.latencyMs + (fault !== undefined && typeof fault === 'object' && 'delayMs' in fault ? fault.delayMs : 0));
      this.answerApi(req, res, entry, route, auth, fault, overConcurrency);
    } catch (error) {
      // A bug in the fake: answer 500 with the reason rather than crash the test process.
      if (!res.headersSent) this.sendJson(res, entry, 500, { message: `fake GitHub error: ${error instanceof Error ? error.stack : String(error)}` }, {});
      else res.destroy();
    } finally {
      if (!overConcurrency) this.inFlight.set(tokenIndex, (this.inFlight.get(tokenIndex) ?? 1) - 1);
    }
  }

  /** `POST /app/installations/{id}/access_tokens`: a JWT of the App in, a token it then accepts out (201), or GitHub's 401/404. */
  private answerMint(req: IncomingMessage, res: ServerResponse, url: URL, installationId: string): void {
    const entry: LogEntry = { host: 'api', method: 'POST', path: url.pathname, query: url.search.slice(1), pathKind: 'app_access_tokens', status: 0, tokenIndex: -1, authorization: req.headers.authorization !== undefined, counted: false, notModified: false, at: Date.now() };
    this.requests.push(entry);
    this.onRequest?.(entry);
    const answer = this.app!.mint(installationId, req.headers.authorization, (token) => this.options.tokens.push(token));
    this.sendJson(res, entry, answer.status, answer.body, this.baseHeaders(-1));
  }

  private answerApi(req: IncomingMessage, res: ServerResponse, entry: LogEntry, route: Route | undefined, auth: number | 'bad', fault: Fault | undefined, overConcurrency: boolean): void {
    const key = entry.tokenIndex;
    const headers = this.baseHeaders(key);
    if (auth === 'bad') return this.sendJson(res, entry, 401, this.error(401, 'Bad credentials', 'https://docs.github.com/rest'), { ...headers, ...this.rateHeaders(-1) });
    if (this.options.requireUserAgent && !req.headers['user-agent']) {
      entry.status = 403;
      res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Request forbidden by administrative rules. Please make sure your request has a User-Agent header (https://docs.github.com/en/rest/overview/resources-in-the-rest-api#user-agent-required). Check https://developer.github.com for other possible causes.\n');
      return;
    }
    if (fault === 'reset') {
      entry.status = -1;
      req.socket.destroy();
      return;
    }
    if (fault === '502') {
      entry.status = 502;
      res.writeHead(502, { 'content-type': 'text/html', 'content-length': String(HTML_502.length) });
      res.end(HTML_502);
      return;
    }
    if (fault === '500') return this.sendJson(res, entry, 500, { message: 'Server Error' }, { ...headers, ...this.rateHeaders(key) });
    const secondary = () => this.sendJson(res, entry, 403, this.error(403, `You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ${headers['x-github-request-id']}.`, `${RATE_DOC}#about-secondary-rate-limits`), { ...headers, ...this.rateHeaders(key), 'retry-after': String(this.options.secondaryRetryAfterS) });
    if (fault === 'secondary' || overConcurrency) return secondary();
    const exhausted = (status: number, resetInMs?: number) => {
      const rate = this.rateHeaders(key);
      if (resetInMs !== undefined) Object.assign(rate, { 'x-ratelimit-remaining': '0', 'x-ratelimit-used': rate['x-ratelimit-limit'], 'x-ratelimit-reset': String(Math.ceil((Date.now() + resetInMs) / 1000)) });
      const who = key >= 0 ? `user ID ${1000 + key}` : (req.socket.remoteAddress ?? '127.0.0.1');
      const extra = key >= 0 ? ` If you reach out to GitHub Support for help, please include the request ID ${headers['x-github-request-id']}.` : " (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)";
      this.sendJson(res, entry, status, this.error(status, `API rate limit exceeded for ${who}.${extra}`, `${RATE_DOC}#primary-rate-limit`), { ...headers, ...rate });
    };
    if (fault === 'rate-limit-403' || fault === 'rate-limit-429') return exhausted(fault === 'rate-limit-403' ? 403 : 429, this.options.injectedResetInMs);
    if (typeof fault === 'object' && 'status' in fault) {
      entry.status = fault.status;
      res.writeHead(fault.status, { ...headers, ...this.rateHeaders(key), 'content-type': 'application/json; charset=utf-8', ...fault.headers });
      res.end(fault.text ?? (fault.body === undefined ? '' : JSON.stringify(fault.body)));
      return;
    }
    const { hostile } = this.options;
    const target = entry.query ? `${entry.path}?${entry.query}` : entry.path;
    if (hostile.redirect && hostileMatch(hostile.redirect.match, target)) {
      entry.status = 302;
      res.writeHead(302, { ...headers, ...this.rateHeaders(key), location: hostile.redirect.to, 'content-length': '0' });
      res.end();
      return;
    }
    if (entry.method !== 'GET' && entry.method !== 'HEAD') {
      if (this.limiter.consume(key)) entry.counted = true;
      return this.sendJson(res, entry, 404, this.error(404, 'Not Found', 'https://docs.github.com/rest'), { ...headers, ...this.rateHeaders(key) });
    }
    const counted = !route?.uncounted;
    if (counted && this.limiter.exhausted(key)) return exhausted(this.options.exhaustedStatus);
    const query = new URL(req.url ?? '/', this.apiUrl).searchParams;
    const answer: Answer = route ? route.run(query, { tokenIndex: key, accept: req.headers.accept ?? '', rate: () => this.limiter.state(key) }) : { kind: 'error', status: 404, message: 'Not Found', doc: 'https://docs.github.com/rest' };
    const count = () => {
      if (counted && this.limiter.consume(key)) entry.counted = true;
    };
    if (answer.kind === 'error') {
      count();
      return this.sendJson(res, entry, answer.status, this.error(answer.status, answer.message, answer.doc), { ...headers, ...this.rateHeaders(key) });
    }
    if (answer.kind === 'raw') {
      count();
      entry.status = answer.status;
      res.writeHead(answer.status, { ...headers, ...this.rateHeaders(key), ...answer.headers, 'content-length': String(answer.body.length) });
      res.end(req.method === 'HEAD' ? undefined : answer.body);
      return;
    }
    if (answer.kind === 'redirect') {
      count();
      entry.status = 302;
      res.writeHead(302, { ...headers, ...this.rateHeaders(key), location: answer.location, 'content-length': '0' });
      res.end();
      return;
    }
    const cacheKey = this.options.cacheResponses ? `${req.url}\u0000${this.project.version}` : undefined;
    const cached = cacheKey !== undefined ? this.rendered.get(cacheKey) : undefined;
    let body: unknown;
    const extra: Record<string, string> = { ...cached?.extra };
    if (!cached) {
      if (answer.kind === 'list') {
        const page = this.paginate(query, answer.items.length);
        if (answer.capped && page.page * page.perPage > this.options.pageCapItems) {
          count();
          return this.sendJson(res, entry, 422, this.error(422, 'Pagination with the page parameter is not supported for large datasets, please use cursor based pagination (after/before)', CAPPED_DOC), { ...headers, ...this.rateHeaders(key) });
        }
        if (hostile.largePageBytes !== undefined && page.page >= 2) {
          count();
          entry.status = 200;
          void sendLargePage(res, { ...headers, ...this.rateHeaders(key) }, hostile.largePageBytes, hostile.largePageChunked ?? false).catch(() => res.destroy());
          return;
        }
        body = answer.items.slice((page.page - 1) * page.perPage, page.page * page.perPage).map((item) => answer.render(item as never));
        const link = this.link(new URL(req.url ?? '/', this.apiUrl), page.page, page.last);
        if (link) extra.link = link;
      } else {
        body = answer.body;
        if (answer.lastModified !== undefined) extra['last-modified'] = new Date(answer.lastModified).toUTCString();
      }
    }
    const text = cached?.text ?? JSON.stringify(body);
    const etag = cached?.etag ?? `W/"${createHash('sha256').update(text).digest('hex')}"`;
    if (cacheKey !== undefined && !cached) this.rendered.set(cacheKey, { text, etag, extra: { ...extra } });
    const inm = req.headers['if-none-match'];
    const ims = req.headers['if-modified-since'];
    const notModified = (inm !== undefined && inm.split(',').map((s) => s.trim()).some((tag) => tag === etag || tag === etag.slice(2) || tag === '*'))
      || (inm === undefined && ims !== undefined && extra['last-modified'] !== undefined && Date.parse(extra['last-modified']) <= Date.parse(ims));
    if (notModified) {
      // GitHub: a 304 to an authenticated conditional request is free.
      entry.notModified = true;
      if (key < 0) count();
      entry.status = 304;
      res.writeHead(304, { ...headers, ...this.rateHeaders(key), etag, 'cache-control': 'private, max-age=60, s-maxage=60', ...extra });
      res.end();
      return;
    }
    count();
    entry.status = 200;
    if (hostile.drip && hostileMatch(hostile.drip.match, target)) {
      void drip(res, 200, { ...headers, ...this.rateHeaders(key), ...extra, etag }, req.method === 'HEAD' ? '' : text, hostile.drip).catch(() => res.destroy());
      return;
    }
    res.writeHead(200, {
      ...headers, ...this.rateHeaders(key), ...extra, etag, 'cache-control': key >= 0 ? 'private, max-age=60, s-maxage=60' : 'public, max-age=60, s-maxage=60',
      'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)),
    });
    res.end(req.method === 'HEAD' ? undefined : text);
  }

  private paginate(query: URLSearchParams, total: number): { page: number; perPage: number; last: number } {
    const rawPer = Number.parseInt(query.get('per_page') ?? '', 10);
    const perPage = Number.isNaN(rawPer) || rawPer < 1 ? 30 : Math.min(100, rawPer);
    const rawPage = Number.parseInt(query.get('page') ?? '', 10);
    const page = Number.isNaN(rawPage) || rawPage < 1 ? 1 : rawPage;
    return { page, perPage, last: Math.max(1, Math.ceil(total / perPage)) };
  }

  /** GitHub's Link header: prev, next, last, first — absolute, other query parameters kept. */
  private link(url: URL, page: number, last: number): string | undefined {
    const claimed = this.options.claimLastPage;
    if (last <= 1 && page <= 1 && claimed === null) return undefined;
    const base = new URL(url.href);
    if (this.options.linkStyle === 'repositories') {
      const { owner, name, id } = this.project.repo;
      const prefix = new URL(this.apiUrl).pathname;
      base.pathname = base.pathname.replace(new RegExp(`^${prefix}/repos/${owner}/${name}(?=/|$)`, 'i'), `${prefix}/repositories/${id}`);
    }
    const at = (n: number) => {
      const target = new URL(base.href);
      target.searchParams.set('page', String(n));
      return `<${target.href}>`;
    };
    const parts: string[] = [];
    if (page > 1) parts.push(`${at(Math.min(page - 1, last))}; rel="prev"`);
    if (page < last) parts.push(`${at(page + 1)}; rel="next"`);
    if (page < last || claimed !== null) parts.push(`${at(claimed ?? last)}; rel="last"`);
    if (page > 1) parts.push(`${at(1)}; rel="first"`);
    return parts.join(', ');
  }

  private async handleWeb(req: IncomingMessage, res: ServerResponse, host: 'web' | 'foreign'): Promise<void> {
    const base = host === 'web' ? this.webUrl : this.foreignUrl;
    const url = new URL(req.url ?? '/', base);
    const pathKind = host === 'foreign' ? 'foreign' : classifyWeb(url.pathname);
    const auth = this.tokenOf(req.headers.authorization);
    const entry: LogEntry = { host, method: req.method ?? 'GET', path: url.pathname, query: url.search.slice(1), pathKind, status: 0, tokenIndex: auth === 'bad' ? -1 : auth, authorization: req.headers.authorization !== undefined, counted: false, notModified: false, at: Date.now() };
    this.requests.push(entry);
    this.onRequest?.(entry);
    res.on('finish', () => { if (entry.status === 0) entry.status = res.statusCode; });
    const fault = this.takeFault({ host, method: entry.method, path: entry.path, query: entry.query, pathKind, tokenIndex: entry.tokenIndex, headers: req.headers });
    if (fault !== undefined) entry.fault = typeof fault === 'string' ? fault : 'delayMs' in fault ? `delay ${fault.delayMs}` : `status ${fault.status}`;
    await sleep(this.latencyMs + (typeof fault === 'object' && 'delayMs' in fault ? fault.delayMs : 0));
    if (fault === 'reset') {
      entry.status = -1;
      req.socket.destroy();
      return;
    }
    if (fault !== undefined && typeof fault === 'string') {
      req.resume();
      const status = fault === '502' ? 502 : fault === '500' ? 500 : fault === 'rate-limit-429' ? 429 : 403;
      res.writeHead(status, { 'content-type': 'text/html' });
      res.end(status === 502 ? HTML_502 : `<html><body><h1>${status}</h1></body></html>`);
      return;
    }
    if (typeof fault === 'object' && 'status' in fault) {
      req.resume();
      res.writeHead(fault.status, { 'content-type': 'text/plain', ...fault.headers });
      res.end(fault.body === undefined ? '' : String(fault.body));
      return;
    }
    const { fileRedirect } = this.options.hostile;
    if (host === 'web' && fileRedirect && pathKind === 'attachment' && hostileMatch(fileRedirect.match, url.pathname)) {
      req.resume();
      res.writeHead(302, { location: fileRedirect.to, 'content-length': '0' });
      res.end();
      return;
    }
    if (host === 'foreign') {
      req.resume();
      const bytes = this.payloads.bytes(`foreign:${url.pathname}`, 'image/png', 300);
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(bytes.length) });
      res.end(bytes);
      return;
    }
    try {
      await this.web.handle(req, res, url);
    } catch (error) {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end(`fake GitHub error: ${error instanceof Error ? error.stack : String(error)}\n`);
      else res.destroy();
    }
  }
}

/** Starts a fake GitHub; see FakeGitHubOptions. */
export function startFakeGitHub(options: FakeGitHubOptions = {}): Promise<FakeGitHub> {
  return FakeGitHub.start(options);
}
