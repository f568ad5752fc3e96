import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type { Schema } from '../../store/types.js';
import type { StoredType } from '../types.js';
import { RecordFiles, writeJsonFile } from './archive.js';
import { ARCHIVE_ROOT, AttachmentLinker, type AttachmentOwner } from './attachments.js';
import { userUrl, type MappingContext } from './map-common.js';
import { issueCommentRecord, issueEventRecord, issueRecord, parentOf, pullRequestRecord, releaseAsset, releaseRecord, reviewCommentRecord, reviewRecord, reviewRequest, reviewThreadRecord } from './map-conversation.js';
import { embeddedCollaborator, embeddedLabel, labelRecord, milestoneRecord, organizationRecord, protectedBranchRecord, protectionTeams, repositoryRecord, teamRecord, userRecord } from './map-repository.js';
import { objectBatches, objectsWithNumbers, pullRequestNumbers, userBatches, type DbId, type ImportRecord, type StoredObject } from '../store/export-rows.js';
import type { ExportOptions, ExportSummary } from './index.js';

/** The archive format version written to `schema.json` (what a Migrations API archive of 2024 says). */
export const ARCHIVE_SCHEMA_VERSION = '1.1.0';

export interface ExporterOptions {
  db: Kysely<Schema>;
  found: ImportRecord;
  repository: Record<string, unknown>;
  ctx: MappingContext;
  dir: string;
  filesDir: string;
  recordsPerFile: number;
  batchSize: number;
  rewriteLinks: boolean;
  copyRepository: ExportOptions['copyRepository'];
}

/** One export run: the open files, the attachments placed, the teams met. */
export class ArchiveExporter {
  readonly #o: ExporterOptions;
  readonly #db: Kysely<Schema>;
  readonly #id: DbId;
  readonly #ctx: MappingContext;
  readonly #counts: Record<string, number> = {};
  readonly #open: RecordFiles[] = [];
  readonly #linker: AttachmentLinker;
  /** Teams met in review requests and branch protections, by slug (a few per project). */
  readonly #teams = new Map<string, Record<string, unknown>>();

  constructor(options: ExporterOptions) {
    this.#o = options;
    this.#db = options.db;
    this.#id = options.found.id;
    this.#ctx = options.ctx;
    this.#linker = new AttachmentLinker({
      db: options.db,
      importId: options.found.id,
      filesDir: options.filesDir,
      archiveDir: options.dir,
      records: this.#files('attachments'),
      rewriteLinks: options.rewriteLinks,
    });
  }

  async run(): Promise<Omit<ExportSummary, 'dir'>> {
    await writeJsonFile(join(this.#o.dir, 'schema.json'), { version: ARCHIVE_SCHEMA_VERSION });
    const repositories = await this.#copyRepositories();
    await this.#repository(repositories);
    await this.#milestones();
    await this.#issues();
    await this.#pullRequests();
    await this.#issueComments();
    await this.#reviews();
    await this.#reviewComments();
    await this.#issueEvents();
    await this.#releases();
    await this.#protectedBranches();
    await this.#writeTeams();
    await this.#users();
    for (const files of this.#open) await files.close();
    return {
      files: Object.fromEntries(Object.entries(this.#counts).sort(([a], [b]) => a.localeCompare(b))),
      attachments: this.#linker.files,
      missingAttachments: this.#linker.missing,
      repositories: repositories.map((entry) => entry.path),
    };
  }

  /** Closes whatever is open after a failure. */
  async abandon(): Promise<void> {
    await Promise.all(this.#open.map((files) => files.abandon()));
  }

  #files(prefix: string): RecordFiles {
    const files = new RecordFiles(this.#o.dir, prefix, this.#o.recordsPerFile, this.#counts);
    this.#open.push(files);
    return files;
  }

  #batches(type: StoredType): AsyncGenerator<StoredObject[]> {
    return objectBatches(this.#db, this.#id, type, this.#o.batchSize);
  }

  /** `repositories/<owner>/<repo>.git` and `.wiki.git`, as the caller writes them; the ones written. */
  async #copyRepositories(): Promise<{ which: 'repository' | 'wiki'; path: string }[]> {
    const { owner, repo } = this.#ctx.urls;
    await mkdir(join(this.#o.dir, 'repositories', owner), { recursive: true });
    const written: { which: 'repository' | 'wiki'; path: string }[] = [];
    for (const [which, path] of [
      ['repository', `repositories/${owner}/${repo}.git`],
      ['wiki', `repositories/${owner}/${repo}.wiki.git`],
    ] as const) {
      const dest = join(this.#o.dir, path);
      if (await this.#o.copyRepository(which, dest)) written.push({ which, path });
      else await rm(dest, { recursive: true, force: true });
    }
    return written;
  }

  /** `repositories_000001.json` (labels and collaborators embedded), `labels_…` and, for an organization's repository, `organizations_…`. */
  async #repository(copied: { which: 'repository' | 'wiki'; path: string }[]): Promise<void> {
    const ctx = this.#ctx;
    const labels: Record<string, unknown>[] = [];
    const labelFiles = this.#files('labels');
    for await (const batch of this.#batches('label')) {
      for (const { data } of batch) {
        labels.push(embeddedLabel(ctx, data));
        await labelFiles.write(labelRecord(ctx, data));
      }
    }
    const collaborators: Record<string, unknown>[] = [];
    for await (const batch of this.#batches('collaborator')) {
      for (const { data } of batch) {
        const collaborator = embeddedCollaborator(ctx, data);
        if (collaborator) collaborators.push(collaborator);
      }
    }
    const pathOf = (which: 'repository' | 'wiki') => copied.find((entry) => entry.which === which)?.path;
    const gitPath = pathOf('repository');
    const wikiPath = pathOf('wiki');
    const repository = this.#o.repository;
    await this.#files('repositories').write(
      repositoryRecord(ctx, repository, {
        labels,
        collaborators,
        gitUrl: gitPath ? `${ARCHIVE_ROOT}${gitPath}` : null,
        wikiUrl: wikiPath ? `${ARCHIVE_ROOT}${wikiPath}` : null,
      }),
    );
    const owner = repository.owner as Record<string, unknown> | undefined;
    if (owner && owner.type === 'Organization') {
      const organization = repository.organization as Record<string, unknown> | undefined;
      await this.#files('organizations').write(organizationRecord(ctx, owner, organization));
    }
  }

  async #milestones(): Promise<void> {
    const files = this.#files('milestones');
    for await (const batch of this.#batches('milestone')) {
      for (const { data } of batch) {
        const record = milestoneRecord(this.#ctx, data);
        if (record) await files.write(record);
      }
    }
  }

  async #issues(): Promise<void> {
    const files = this.#files('issues');
    for await (const batch of this.#batches('issue')) {
      await this.#linker.prepare(batch.map((row) => row.data.body));
      for (const { data } of batch) {
        const number = numberOf(data.number);
        if (number === undefined) continue;
        const body = await this.#linker.rewrite(data.body, this.#owner('issue', this.#ctx.urls.issue(number), data));
        const record = issueRecord(this.#ctx, data, body);
        if (record) await files.write(record);
      }
    }
  }

  async #pullRequests(): Promise<void> {
    const files = this.#files('pull_requests');
    for await (const batch of this.#batches('pull_request')) {
      await this.#linker.prepare(batch.map((row) => row.data.body));
      const numbers = batch.map((row) => row.number ?? numberOf(row.data.number)).filter((n): n is number => n !== undefined);
      const requests = new Map<number, Record<string, unknown>[]>();
      for (const row of await objectsWithNumbers(this.#db, this.#id, 'pull_request_review_request', numbers)) {
        if (row.number === null) continue;
        const request = reviewRequest(this.#ctx, row.key, row.data);
        if (!request) continue;
        if (request.reviewer_type === 'Team') this.#meetTeam(row.data);
        requests.set(row.number, [...(requests.get(row.number) ?? []), request]);
      }
      for (const { data } of batch) {
        const number = numberOf(data.number);
        if (number === undefined) continue;
        const body = await this.#linker.rewrite(data.body, this.#owner('pull_request', this.#ctx.urls.pull(number), data));
        const record = pullRequestRecord(this.#ctx, data, body, requests.get(number) ?? []);
        if (record) await files.write(record);
      }
    }
  }

  async #issueComments(): Promise<void> {
    const files = this.#files('issue_comments');
    for await (const batch of this.#batches('note')) {
      await this.#linker.prepare(batch.map((row) => row.data.body));
      const pulls = await this.#pullNumbersOf(batch);
      for (const row of batch) {
        if (row.number === null || !hasId(row.data)) continue;
        const parent = parentOf(this.#ctx, row.number, pulls.has(row.number));
        const id = row.data.id;
        const body = await this.#linker.rewrite(row.data.body, this.#owner('issue_comment', this.#ctx.urls.issueComment(parent.url, String(id)), row.data));
        const record = issueCommentRecord(this.#ctx, row.data, parent, body);
        if (record) await files.write(record);
      }
    }
  }

  async #reviews(): Promise<void> {
    const files = this.#files('pull_request_reviews');
    for await (const batch of this.#batches('pull_request_review')) {
      await this.#linker.prepare(batch.map((row) => row.data.body));
      for (const row of batch) {
        if (row.number === null || !hasId(row.data)) continue;
        const url = this.#ctx.urls.review(row.number, String(row.data.id));
        const body = await this.#linker.rewrite(row.data.body, this.#owner('pull_request_review', url, row.data, row.data.submitted_at));
        const record = reviewRecord(this.#ctx, row.data, row.number, body);
        if (record) await files.write(record);
      }
    }
  }

  /** `pull_request_review_comments_…` and the threads their first comments start (`pull_request_review_threads_…`). */
  async #reviewComments(): Promise<void> {
    const files = this.#files('pull_request_review_comments');
    const threads = this.#files('pull_request_review_threads');
    for await (const batch of this.#batches('diff_note')) {
      await this.#linker.prepare(batch.map((row) => row.data.body));
      for (const row of batch) {
        if (row.number === null || !hasId(row.data)) continue;
        const url = this.#ctx.urls.reviewComment(row.number, String(row.data.id));
        const body = await this.#linker.rewrite(row.data.body, this.#owner('pull_request_review_comment', url, row.data));
        const record = reviewCommentRecord(this.#ctx, row.data, row.number, body);
        if (!record) continue;
        await files.write(record);
        const thread = reviewThreadRecord(this.#ctx, row.data, row.number);
        if (thread) await threads.write(thread);
      }
    }
  }

  async #issueEvents(): Promise<void> {
    const files = this.#files('issue_events');
    for await (const batch of this.#batches('issue_event')) {
      const pulls = await this.#pullNumbersOf(batch);
      for (const row of batch) {
        const number = row.number ?? numberOf((row.data.issue as Record<string, unknown> | undefined)?.number);
        if (number === undefined || number === null) continue;
        const event = row.data;
        if (event.requested_team) this.#meetTeam(event.requested_team as Record<string, unknown>);
        const record = issueEventRecord(this.#ctx, event, parentOf(this.#ctx, number, pulls.has(number)));
        if (record) await files.write(record);
      }
    }
  }

  async #releases(): Promise<void> {
    const files = this.#files('releases');
    for await (const batch of this.#batches('release')) {
      const assetsOf = (data: Record<string, unknown>) => (Array.isArray(data.assets) ? (data.assets as Record<string, unknown>[]) : []);
      await this.#linker.prepare(
        batch.map((row) => row.data.body),
        batch.flatMap((row) => assetsOf(row.data).flatMap((asset) => [asset.browser_download_url, asset.url])),
      );
      for (const { data } of batch) {
        if (typeof data.tag_name !== 'string' || !data.tag_name) continue;
        const url = this.#ctx.urls.release(data.tag_name);
        const assets: Record<string, unknown>[] = [];
        for (const asset of assetsOf(data)) {
          const placed = await this.#linker.assetPath([asset.browser_download_url, asset.url]);
          if (placed) assets.push(releaseAsset(this.#ctx, asset, url, placed.assetUrl));
        }
        const body = await this.#linker.rewrite(data.body, { type: 'release', url, user: userUrl(this.#ctx, data.author), createdAt: data.created_at });
        const record = releaseRecord(this.#ctx, data, body, assets);
        if (record) await files.write(record);
      }
    }
  }

  async #protectedBranches(): Promise<void> {
    const files = this.#files('protected_branches');
    for await (const batch of this.#batches('protected_branch')) {
      for (const row of batch) {
        for (const team of protectionTeams(row.data)) this.#meetTeam(team);
        await files.write(protectedBranchRecord(this.#ctx, row.key, row.data));
      }
    }
  }

  async #writeTeams(): Promise<void> {
    const files = this.#files('teams');
    for (const team of [...this.#teams.values()]) {
      const record = teamRecord(this.#ctx, team);
      if (record) await files.write(record);
    }
  }

  async #users(): Promise<void> {
    const files = this.#files('users');
    for await (const batch of userBatches(this.#db, this.#id, this.#o.found.apiUrl, this.#o.batchSize)) {
      for (const profile of batch) {
        const record = userRecord(this.#ctx, profile);
        if (record) await files.write(record);
      }
    }
  }

  #meetTeam(team: Record<string, unknown>): void {
    const slug = team.slug;
    if (typeof slug === 'string' && slug && !this.#teams.has(slug)) this.#teams.set(slug, team);
  }

  #owner(type: string, url: string, data: Record<string, unknown>, createdAt: unknown = data.created_at): AttachmentOwner {
    return { type, url, user: userUrl(this.#ctx, data.user), createdAt };
  }

  /** Which of a batch's issue numbers are pull requests. */
  #pullNumbersOf(batch: StoredObject[]): Promise<Set<number>> {
    const numbers = [...new Set(batch.map((row) => row.number).filter((n): n is number => n !== null))];
    return pullRequestNumbers(this.#db, this.#id, numbers);
  }
}

/** Records are named by GitHub's id: a row without one is skipped before its body is looked at. */
function hasId(data: Record<string, unknown>): boolean {
  return typeof data.id === 'number' && Number.isInteger(data.id);
}

function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}

