/**
 * The base of FakeUpstream (upstream.ts): how a mutation's deliveries are
 * sent, and the repository-wide mutations with the webhooks GitHub sends for
 * them: labels (`label`), milestones (`milestone`), releases (`release`),
 * collaborators (`member`), branch protection (`branch_protection_rule`) and
 * the repository's rename and transfer (`repository`).
 */
import { existsSync } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Json } from './payloads.js';
import type { BranchRecord, CollaboratorRecord, FakeProject, LabelRecord, MilestoneRecord, Permission, ProtectionSettings, ReleaseRecord, RepoRecord } from './project.js';
import type { FakeGitHub } from './server.js';
import * as m from './mutations.js';
import { WebhookPayloads } from './webhook-payloads.js';
import { WebhookSender, type BuiltDelivery, type SentDelivery, type WebhookTarget } from './webhook-delivery.js';

/** Per call: who acts (the delivery's `sender`) and whether to deliver this time. */
export interface Act {
  by?: string;
  /** false: change the fake, send nothing (default: `upstream.delivering`). */
  deliver?: boolean;
}

/** One delivery a mutation makes, before it is sent. */
export interface Planned {
  event: string;
  payload: Json;
}

/** What every mutation returns besides its record: the deliveries sent (none without a target) and the payloads it made. */
export interface Sent {
  deliveries: SentDelivery[];
  planned: Planned[];
}

export class RepoUpstream {
  /** false: mutations change the fake and send nothing (a call's `{ deliver: true }` still sends). */
  delivering = true;
  readonly project: FakeProject;
  /** The webhook bodies this upstream sends (also for tests that build their own). */
  readonly webhooks: WebhookPayloads;
  protected readonly sender: WebhookSender;

  constructor(readonly fake: FakeGitHub, readonly target?: WebhookTarget) {
    this.project = fake.project;
    this.webhooks = new WebhookPayloads(fake.project, fake.payloads);
    this.sender = new WebhookSender(() => fake.project.repo.id, target);
  }

  /** Every delivery sent so far, in order. */
  get sent(): SentDelivery[] {
    return this.sender.sent;
  }

  /** GitHub's headers and the exact signed body of a delivery, for a test that POSTs it itself. */
  buildDelivery(event: string, payload: unknown, secret?: string): BuiltDelivery {
    return this.sender.build(event, payload, secret);
  }

  /** POSTs one delivery to the target now (whatever `delivering` says). */
  deliver(event: string, payload: unknown): Promise<SentDelivery> {
    return this.sender.send(event, payload);
  }

  /** Sends `planned` in order when there is a target and delivering is on for this call. */
  protected async emit(act: Act | undefined, planned: Planned[]): Promise<Sent> {
    const deliveries: SentDelivery[] = [];
    if (this.target !== undefined && (act?.deliver ?? this.delivering)) {
      for (const item of planned) deliveries.push(await this.sender.send(item.event, item.payload));
    }
    return { deliveries, planned };
  }

  /** One delivery of `event`: the envelope of `action` by `by` around `fields`. */
  protected one(event: string, action: string, by: string, fields: Record<string, Json>): Planned {
    return { event, payload: this.webhooks.envelope(action, by, fields) };
  }

  /** Who acts on the repository when a call does not say: its first admin, else its owner. */
  protected admin(act?: Act): string {
    return act?.by ?? this.project.collaborators.find((c) => c.permission === 'admin')?.login ?? this.project.repo.owner;
  }

  // ---- labels ---------------------------------------------------------------------

  async createLabel(input: { name: string; color: string; description?: string | null }, act?: Act): Promise<{ label: LabelRecord } & Sent> {
    const label = m.createLabel(this.project, input);
    return { label, ...(await this.emit(act, [this.one('label', 'created', this.admin(act), { label: this.webhooks.label(label) })])) };
  }

  /** Edits a label (a rename keeps its id; `changes.name.from` names the old one). */
  async editLabel(name: string, patch: { name?: string; color?: string; description?: string | null }, act?: Act): Promise<{ label: LabelRecord } & Sent> {
    const { label, changes } = m.editLabel(this.project, name, patch);
    return { label, ...(await this.emit(act, [this.one('label', 'edited', this.admin(act), { label: this.webhooks.label(label), changes })])) };
  }

  async deleteLabel(name: string, act?: Act): Promise<{ label: LabelRecord } & Sent> {
    const label = m.deleteLabel(this.project, name);
    return { label, ...(await this.emit(act, [this.one('label', 'deleted', this.admin(act), { label: this.webhooks.label(label) })])) };
  }

  // ---- milestones -------------------------------------------------------------------

  async createMilestone(input: { title: string; description?: string | null; dueOn?: number | null }, act?: Act): Promise<{ milestone: MilestoneRecord } & Sent> {
    const milestone = m.createMilestone(this.project, { ...input, creator: this.admin(act) });
    return { milestone, ...(await this.emit(act, [this.one('milestone', 'created', this.admin(act), { milestone: this.webhooks.milestone(milestone) })])) };
  }

  async editMilestone(number: number, patch: { title?: string; description?: string | null; dueOn?: number | null }, act?: Act): Promise<{ milestone: MilestoneRecord } & Sent> {
    const { milestone, changes } = m.editMilestone(this.project, number, patch);
    return { milestone, ...(await this.emit(act, [this.one('milestone', 'edited', this.admin(act), { milestone: this.webhooks.milestone(milestone), changes })])) };
  }

  async closeMilestone(number: number, act?: Act): Promise<{ milestone: MilestoneRecord } & Sent> {
    const { milestone } = m.editMilestone(this.project, number, { state: 'closed' });
    return { milestone, ...(await this.emit(act, [this.one('milestone', 'closed', this.admin(act), { milestone: this.webhooks.milestone(milestone) })])) };
  }

  async reopenMilestone(number: number, act?: Act): Promise<{ milestone: MilestoneRecord } & Sent> {
    const { milestone } = m.editMilestone(this.project, number, { state: 'open' });
    return { milestone, ...(await this.emit(act, [this.one('milestone', 'opened', this.admin(act), { milestone: this.webhooks.milestone(milestone) })])) };
  }

  /** Deletes a milestone (its issues lose it; GitHub sends no issue deliveries for that). */
  async deleteMilestone(number: number, act?: Act): Promise<{ milestone: MilestoneRecord } & Sent> {
    const milestone = m.deleteMilestone(this.project, number);
    return { milestone, ...(await this.emit(act, [this.one('milestone', 'deleted', this.admin(act), { milestone: this.webhooks.milestone(milestone) })])) };
  }

  // ---- releases -----------------------------------------------------------------------

  /**
   * Creates a release. Published at once, GitHub sends `created`, `published`
   * and `released` (`prereleased` for a pre-release); a draft only `created`.
   */
  async publishRelease(input: { tag: string; name?: string; body?: string; prerelease?: boolean; draft?: boolean }, act?: Act): Promise<{ release: ReleaseRecord } & Sent> {
    const by = act?.by ?? this.admin(act);
    const release = m.createRelease(this.project, { ...input, author: by });
    const actions = release.draft ? ['created'] : ['created', 'published', release.prerelease ? 'prereleased' : 'released'];
    return { release, ...(await this.emit(act, actions.map((action) => this.one('release', action, by, { release: this.webhooks.release(release) })))) };
  }

  /** Edits a release (`changes` for name, body, tag_name); `draft: false` publishes a draft (`published`, then `released`/`prereleased`). */
  async editRelease(id: number, patch: { name?: string; body?: string; tag?: string; prerelease?: boolean; draft?: boolean }, act?: Act): Promise<{ release: ReleaseRecord } & Sent> {
    const wasDraft = this.project.releases.find((r) => r.id === id)?.draft === true;
    const { release, changes } = m.editRelease(this.project, id, patch);
    const by = this.admin(act);
    const planned: Planned[] = [];
    if (Object.keys(changes).length > 0 || !(wasDraft && !release.draft)) planned.push(this.one('release', 'edited', by, { release: this.webhooks.release(release), changes }));
    if (wasDraft && !release.draft) for (const action of ['published', release.prerelease ? 'prereleased' : 'released']) planned.push(this.one('release', action, by, { release: this.webhooks.release(release) }));
    return { release, ...(await this.emit(act, planned)) };
  }

  async deleteRelease(id: number, act?: Act): Promise<{ release: ReleaseRecord } & Sent> {
    const release = m.deleteRelease(this.project, id);
    return { release, ...(await this.emit(act, [this.one('release', 'deleted', this.admin(act), { release: this.webhooks.release(release) })])) };
  }

  // ---- collaborators ---------------------------------------------------------------------

  /** Adds a direct collaborator (`member.added`), or changes the permission of an existing one (`member.edited`). */
  async addCollaborator(login: string, permission: Permission = 'write', act?: Act): Promise<{ collaborator: CollaboratorRecord } & Sent> {
    const { collaborator, from } = m.setCollaborator(this.project, login, permission);
    const changes = from === undefined ? { permission: { to: permission } } : { old_permission: { from }, permission: { from, to: permission } };
    const planned = this.one('member', from === undefined ? 'added' : 'edited', this.admin(act), { member: this.webhooks.user(login), changes });
    return { collaborator, ...(await this.emit(act, [planned])) };
  }

  editCollaborator(login: string, permission: Permission, act?: Act): Promise<{ collaborator: CollaboratorRecord } & Sent> {
    if (!this.project.collaborators.some((c) => c.login === login)) throw new Error(`${login} is no collaborator of the fake repository`);
    return this.addCollaborator(login, permission, act);
  }

  async removeCollaborator(login: string, act?: Act): Promise<{ collaborator: CollaboratorRecord } & Sent> {
    const collaborator = m.removeCollaborator(this.project, login);
    return { collaborator, ...(await this.emit(act, [this.one('member', 'removed', this.admin(act), { member: this.webhooks.user(login) })])) };
  }

  // ---- branch protection -------------------------------------------------------------------

  /** Protects a branch (`branch_protection_rule.created`), or changes its protection (`edited`, with the rule's former values in `changes`). */
  async protectBranch(name: string, settings: Partial<ProtectionSettings> = {}, act?: Act): Promise<{ branch: BranchRecord } & Sent> {
    const existing = this.project.branches.find((b) => b.name === name && b.protection !== null);
    const before: Json = existing ? this.webhooks.rule(existing) : undefined;
    const { branch, created } = m.protectBranch(this.project, name, settings);
    const rule = this.webhooks.rule(branch);
    const fields: Json = { rule };
    if (!created) fields.changes = Object.fromEntries(Object.keys(rule).filter((key) => key !== 'updated_at' && JSON.stringify(rule[key]) !== JSON.stringify(before[key])).map((key) => [key, { from: before[key] }]));
    return { branch, ...(await this.emit(act, [this.one('branch_protection_rule', created ? 'created' : 'edited', this.admin(act), fields)])) };
  }

  async unprotectBranch(name: string, act?: Act): Promise<{ branch: BranchRecord } & Sent> {
    const before = m.unprotectBranch(this.project, name);
    const branch = this.project.branches.find((b) => b.name === name) as BranchRecord;
    return { branch, ...(await this.emit(act, [this.one('branch_protection_rule', 'deleted', this.admin(act), { rule: this.webhooks.rule(before) })])) };
  }

  /**
   * With git, the web host serves git at the repository's current
   * `owner/name`: links there to the bare repositories, which keep their
   * first paths (the git layer names them once). The old clone URLs answer 404.
   */
  private async followGit(): Promise<void> {
    const repos = this.fake.gitRepos;
    if (!repos) return;
    const { owner, name } = this.project.repo;
    await mkdir(join(repos.root, owner), { recursive: true });
    for (const [from, suffix] of [[repos.mainPath, '.git'], [repos.wikiPath, '.wiki.git']] as const) {
      const to = join(repos.root, owner, `${name}${suffix}`);
      if (to !== from && existsSync(from) && !existsSync(to)) await symlink(from, to, 'dir');
    }
  }

  // ---- the repository --------------------------------------------------------------------------

  /** Renames the repository: the old name answers 301 to `/repositories/{id}`; `changes.repository.name.from`. */
  async renameRepository(name: string, act?: Act): Promise<{ repository: RepoRecord } & Sent> {
    const from = m.renameRepository(this.project, name);
    await this.followGit();
    const planned = this.one('repository', 'renamed', this.admin(act), { changes: { repository: { name: { from } } } });
    return { repository: this.project.repo, ...(await this.emit(act, [planned])) };
  }

  /** Transfers the repository to `owner` (an organization unless said otherwise); `changes.owner.from` the former owner. */
  async transferRepository(owner: string, act?: Act & { type?: 'User' | 'Organization' }): Promise<{ repository: RepoRecord } & Sent> {
    const fromLogin = this.project.repo.owner;
    const by = this.admin(act);
    const from = this.webhooks.user(fromLogin);
    m.transferRepository(this.project, owner, act?.type);
    await this.followGit();
    const key = from.type === 'Organization' ? 'organization' : 'user';
    const planned = this.one('repository', 'transferred', by, { changes: { owner: { from: { [key]: from } } } });
    return { repository: this.project.repo, ...(await this.emit(act, [planned])) };
  }
}
