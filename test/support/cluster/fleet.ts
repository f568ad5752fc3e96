// The upstream side of the distributed-mode proof: many bare repositories
// served over smart HTTP by one real `git http-backend` server (some can be
// made slow, so a sync is surely in flight when a worker is killed or
// stopped), pushes into them, and the signed GitHub push deliveries that
// announce each push to the api.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { signBody } from '../../../src/replication/webhooks/signature.js';
import { FIXTURE_ENV } from '../git-fixtures.js';
import { GitHttpServer } from '../git-http-server.js';

const run = promisify(execFile);

const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

/** Async: the http server answering the workers runs on this process's event loop, which must not block. */
async function git(dir: string, ...args: string[]): Promise<string> {
  return (await run('git', args, { cwd: dir, env: FIXTURE_ENV })).stdout.trim();
}

/**
 * `count` bare upstreams `p<i>.git` under `root`. Pushes are written with
 * plumbing straight into the bare repository (commit-tree + update-ref: what
 * a push does to the refs, two processes instead of a work tree's five), so
 * hundreds fit in the time budget of a test on two cores.
 */
export class UpstreamFleet {
  /** Repositories (`p<i>.git`) whose every request the server answers only after `slowMs`. */
  readonly slow = new Set<string>();
  readonly slowMs = 3_000;
  pushes = 0;
  #chains = new Map<number, Promise<unknown>>();

  private constructor(
    readonly root: string,
    readonly server: GitHttpServer,
    readonly count: number,
  ) {
    server.delayMs = (request) => (this.slow.has(request.path.split('/')[1] ?? '') ? this.slowMs : 0);
  }

  static async create(root: string, count: number): Promise<UpstreamFleet> {
    mkdirSync(root, { recursive: true });
    // One repository made with git, copied: creating 200 with git would cost ~1000 processes.
    const template = join(root, 'template');
    await git(root, 'init', '--quiet', '--bare', '--initial-branch=main', template);
    const initial = await git(template, 'commit-tree', EMPTY_TREE, '-m', 'initial');
    await git(template, 'update-ref', 'refs/heads/main', initial);
    for (let i = 0; i < count; i++) cpSync(template, join(root, `p${i}.git`), { recursive: true });
    return new UpstreamFleet(root, await GitHttpServer.start({ root }), count);
  }

  name(i: number): string {
    return `p${i}`;
  }

  url(i: number): string {
    return this.server.url(`p${i}.git`);
  }

  bare(i: number): string {
    return join(this.root, `p${i}.git`);
  }

  /** Commits on main (every fifth push also moves a topic branch); pushes to one repository are serialised. Resolves with the sha. */
  push(i: number): Promise<string> {
    const next = (this.#chains.get(i) ?? Promise.resolve()).then(async () => {
      const n = ++this.pushes;
      const sha = await git(this.bare(i), 'commit-tree', EMPTY_TREE, '-p', 'refs/heads/main', '-m', `push ${n}`);
      await git(this.bare(i), 'update-ref', 'refs/heads/main', sha);
      if (n % 5 === 0) await git(this.bare(i), 'update-ref', `refs/heads/topic-${n % 3}`, sha);
      return sha;
    });
    this.#chains.set(i, next.catch(() => undefined));
    return next;
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

/** Signed GitHub `push` deliveries to the api's `/hooks/github`, retried until one is accepted (as GitHub redelivers). */
export class WebhookSender {
  accepted = 0;
  /** Deliveries answered with an error (api or registry unavailable) and sent again. */
  retried = 0;

  constructor(
    private readonly apiUrl: string,
    private readonly secret: string,
  ) {}

  async send(fleet: UpstreamFleet, i: number, sha: string): Promise<void> {
    const timeoutMs = 60_000;
    const payload = { ref: 'refs/heads/main', after: sha, repository: { full_name: `proof/${fleet.name(i)}`, clone_url: fleet.url(i) } };
    const body = JSON.stringify(payload);
    // One id for the delivery and its retries, as GitHub redelivers: one recorded before its answer was lost is a duplicate.
    const id = randomUUID();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const answer = await fetch(`${this.apiUrl}/hooks/github`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'push',
          'x-github-delivery': id,
          'x-hub-signature-256': signBody(this.secret, body),
        },
        body,
      }).then(
        async (response) => ({ status: response.status, result: ((await response.json().catch(() => ({}))) as { result?: string }).result }),
        (error: Error) => ({ status: 0, result: error.message }),
      );
      if (answer.status === 202 && (answer.result === 'accepted' || answer.result === 'duplicate')) {
        this.accepted++;
        return;
      }
      // Only an unavailable backend is worth another try; anything else is a bug of this test or the api.
      if (answer.status !== 0 && answer.status < 500) throw new Error(`webhook for ${fleet.name(i)} answered ${answer.status} ${answer.result}`);
      if (Date.now() > deadline) throw new Error(`webhook for ${fleet.name(i)} still failing after ${timeoutMs} ms: ${answer.status} ${answer.result}`);
      this.retried++;
      await sleep(250);
    }
  }
}

/** Pushes to a random upstream and announces it, every `everyMs`, until stopped: the load the chaos happens under. */
export class Pusher {
  #running = false;
  #loop: Promise<void> | undefined;
  error: Error | undefined;

  constructor(
    private readonly fleet: UpstreamFleet,
    private readonly hooks: WebhookSender,
    private readonly everyMs: number,
  ) {}

  start(): void {
    this.#running = true;
    this.#loop = (async () => {
      while (this.#running) {
        const i = Math.floor(Math.random() * this.fleet.count);
        try {
          await this.hooks.send(this.fleet, i, await this.fleet.push(i));
        } catch (error) {
          this.error ??= error as Error;
        }
        await sleep(this.everyMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
    if (this.error) throw this.error;
  }
}
