import { rm, stat } from 'node:fs/promises';
import type { FastifyReply } from 'fastify';
import type { ReplicationApi } from '../replication/api.js';
import type { LfsApi, LfsFsckReport, LfsHttpRequest, LfsPruneReport } from './api.js';
import type { ObjectFiles } from './files.js';
import type { LfsObjectRepository, LfsObjectRow, LfsObjectState, LfsSummary } from './store/objects.js';

/** A download's temporary file older than this is a crash's leftover (a download lasts FORGESYNC_LFS_TIMEOUT at most, up to a day). */
const LEFTOVER_AGE_MS = 86_400_000;

export interface LfsOptions {
  sources: ReplicationApi;
  objects: LfsObjectRepository;
  files: ObjectFiles;
}

/** The lfs module's API (see api.ts); replication itself is the LfsReplicator, a follower of syncs. */
export class Lfs implements LfsApi {
  constructor(private readonly options: LfsOptions) {}

  async summaries(sourceIds: readonly number[]): Promise<Map<number, LfsSummary>> {
    const byId = await this.options.objects.summaries(sourceIds);
    return new Map(sourceIds.map((id) => [id, byId.get(id) ?? { objects: 0, bytes: 0, missing: 0 }]));
  }

  async objects(name: string, states?: readonly LfsObjectState[]): Promise<LfsObjectRow[]> {
    const source = await this.options.sources.getSource(name);
    return this.options.objects.list(source.id, states);
  }

  /**
   * Hashes every object the source has stored. A damaged file is deleted
   * and, like an absent one, every source's row of it goes back to pending
   * (they share the file): their next syncs fetch it again.
   */
  async fsck(name: string): Promise<LfsFsckReport> {
    const { objects, files } = this.options;
    const source = await this.options.sources.getSource(name);
    const report: LfsFsckReport = { name: source.name, checked: 0, ok: 0, damaged: [], absent: [] };
    for (const row of await objects.list(source.id, ['present'])) {
      report.checked++;
      const found = await files.check(row);
      if (found === 'ok') {
        report.ok++;
        continue;
      }
      if (found === 'damaged') await files.discard(row.oid);
      report[found].push(row.oid);
      await objects.resetEverywhere(row.oid, `lfs fsck found the stored object ${found}`, new Date());
    }
    return report;
  }

  /**
   * Deletes this disk's objects that no source references and that were not
   * used for `graceMs`. A sync adopting a stored object marks it used before
   * it records it, and its row exists before it looks: a prune that saw no
   * row leaves an object used since. Looked at in pages of 500.
   */
  async prune(options: { graceMs: number }): Promise<LfsPruneReport> {
    const { objects, files } = this.options;
    const report: LfsPruneReport = { deleted: 0, bytes: 0, kept: 0 };
    let page: { oid: string; modifiedMs: number }[] = [];
    const sweep = async (): Promise<void> => {
      const referenced = await objects.referenced(page.map((entry) => entry.oid));
      for (const entry of page) {
        const info = referenced.has(entry.oid) ? undefined : await stat(files.pathOf(entry.oid)).catch(() => undefined);
        if (!info || Date.now() - info.mtimeMs < options.graceMs) {
          report.kept++;
          continue;
        }
        await files.discard(entry.oid);
        report.deleted++;
        report.bytes += info.size;
      }
      page = [];
    };
    for await (const entry of files.stored()) {
      if ('leftover' in entry) {
        // A download's temporary file: left by a crash once older than any download may last.
        if (Date.now() - entry.modifiedMs > Math.max(options.graceMs, LEFTOVER_AGE_MS)) await rm(entry.leftover, { force: true });
        continue;
      }
      page.push(entry);
      if (page.length >= 500) await sweep();
    }
    await sweep();
    return report;
  }

  async serve(request: LfsHttpRequest): Promise<FastifyReply> {
    // Loaded only by a serving process.
    const { serveLfs } = await import('./http/serve.js');
    return serveLfs(request, this.options);
  }
}
