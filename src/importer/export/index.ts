import { lstat, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Database } from '../../store/database.js';
import { RECORDS_PER_FILE } from './archive.js';
import { ExportTargetNotDirectoryError, ExportTargetNotEmptyError, ImportNotFetchedError, ImportNotFoundError, InvalidExportOptionError, UnsafeArchivePathError } from './errors.js';
import { ArchiveExporter } from './exporter.js';
import { findImport, findObject } from '../store/export-rows.js';
import { ArchiveUrls, webRoot } from './urls.js';

export { RECORDS_PER_FILE } from './archive.js';
export * from './errors.js';

export { ARCHIVE_SCHEMA_VERSION } from './exporter.js';
/** Rows read per query (keyset-paginated). */
export const DEFAULT_BATCH_SIZE = 500;

/** What exportImport exports, and where. */
export interface ExportOptions {
  database: Pick<Database, 'db' | 'dialect'>;
  /** Where the importer keeps attachment bytes: `<filesDir>/<sha256>`. */
  filesDir: string;
  /** The import's name (case-insensitive). */
  name: string;
  /** The archive's directory: must not exist, or be empty. */
  to: string;
  /**
   * Writes a bare git repository of the import's repository (or its wiki) at
   * `dest` (which does not exist); false when there is none to write.
   */
  copyRepository: (which: 'repository' | 'wiki', dest: string) => Promise<boolean>;
  /** Records per JSON file before the next (`_000002`) is started; default {@link RECORDS_PER_FILE}, as GitHub writes them. */
  recordsPerFile?: number;
  /** Rows read per query; default {@link DEFAULT_BATCH_SIZE}. */
  batchSize?: number;
  /**
   * Replace downloaded attachments' URLs in bodies by their archive paths
   * (`tarball://root/attachments/<sha256>/<name>`), so the archive reads
   * without GitHub; default true. With false, bodies keep GitHub's URLs, as
   * GitHub's own exports do, and only `attachments_NNNNNN.json` maps each URL
   * to its file.
   */
  rewriteAttachmentLinks?: boolean;
}

/** What an export wrote. */
export interface ExportSummary {
  /** The archive's directory (absolute). */
  dir: string;
  /** Each JSON file of records (`issues_000001.json`) and how many records it holds; schema.json is not listed. */
  files: Record<string, number>;
  /** Attachment and release-asset files in `attachments/` (each content once). */
  attachments: number;
  /** Downloaded attachments whose stored file was not found: their links were left pointing at GitHub. */
  missingAttachments: number;
  /** The bare repositories written, relative to `dir` (`repositories/acme/widgets.git`, `….wiki.git`). */
  repositories: string[];
}

/**
 * Writes one import as a GitHub migration archive (the layout
 * `ghe-migrator` and the Migrations API produce, unpacked): `schema.json`,
 * one series of JSON files per record type (`issues_000001.json`, … of
 * `recordsPerFile` records each), `attachments/` with each attachment's
 * file once, and `repositories/<owner>/<repo>.git` (+ `.wiki.git`).
 * Records reference each other by URL (see ArchiveUrls).
 *
 * Every type is read in keyset-paginated batches and written as it is
 * read, so memory stays flat however large the project. Everything is
 * written into a temporary directory beside `to`, renamed into place at the
 * end: a failed export leaves no `to` (and no temporary directory).
 *
 * @throws ImportNotFoundError when no import has this name.
 * @throws ExportTargetNotEmptyError / ExportTargetNotDirectoryError when `to` holds something (it is left untouched).
 * @throws ImportNotFetchedError when the import has not stored its repository yet.
 * @throws InvalidExportOptionError for a records-per-file or batch size that is not a positive integer.
 */
export async function exportImport(options: ExportOptions): Promise<ExportSummary> {
  const recordsPerFile = positiveInteger('recordsPerFile', options.recordsPerFile ?? RECORDS_PER_FILE, 1_000_000);
  const batchSize = positiveInteger('batchSize', options.batchSize ?? DEFAULT_BATCH_SIZE, 10_000);
  const db = options.database.db;
  const found = await findImport(db, options.name);
  if (!found) throw new ImportNotFoundError(options.name);
  const to = resolve(options.to);
  await refuseExisting(to);
  const repository = await findObject(db, found.id, 'repository', 'repository');
  if (!repository) throw new ImportNotFetchedError(found.name);

  const fullName = typeof repository.data.full_name === 'string' ? repository.data.full_name.split('/') : [];
  const owner = safeSegment(fullName.length === 2 ? fullName[0]! : found.owner);
  const repo = safeSegment(fullName.length === 2 ? fullName[1]! : found.repo);
  const urls = new ArchiveUrls(webRoot(repository.data.html_url, found.apiUrl), owner, repo);

  const parent = dirname(to);
  await mkdir(parent, { recursive: true });
  const temp = await mkdtemp(join(parent, `.${basename(to)}.export-`));
  const exporter = new ArchiveExporter({
    db,
    found,
    repository: repository.data,
    ctx: { urls, org: owner },
    dir: temp,
    filesDir: options.filesDir,
    recordsPerFile,
    batchSize,
    rewriteLinks: options.rewriteAttachmentLinks !== false,
    copyRepository: options.copyRepository,
  });
  try {
    const summary = await exporter.run();
    await moveIntoPlace(temp, to);
    return { ...summary, dir: to };
  } catch (error) {
    await exporter.abandon();
    await rm(temp, { recursive: true, force: true });
    throw error;
  }
}

function positiveInteger(option: string, value: number, max: number): number {
  if (!Number.isInteger(value) || value < 1 || value > max) throw new InvalidExportOptionError(option, value, `an integer from 1 to ${max}`);
  return value;
}

/** GitHub owner and repository names: letters, digits, `.`, `-`, `_` (never `.` or `..`). */
function safeSegment(segment: string): string {
  if (!/^[A-Za-z0-9._-]+$/.test(segment) || segment === '.' || segment === '..') throw new UnsafeArchivePathError(segment);
  return segment;
}

/** Refuses a target that exists and is not an empty directory (without touching it). */
async function refuseExisting(to: string): Promise<void> {
  let stat;
  try {
    stat = await lstat(to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (!stat.isDirectory()) throw new ExportTargetNotDirectoryError(to);
  if ((await readdir(to)).length > 0) throw new ExportTargetNotEmptyError(to);
}

/** Renames the finished archive to `to` (an empty directory there is replaced; one that filled meanwhile is not). */
async function moveIntoPlace(temp: string, to: string): Promise<void> {
  try {
    await rename(temp, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST') throw new ExportTargetNotEmptyError(to);
    if (code === 'ENOTDIR') throw new ExportTargetNotDirectoryError(to);
    throw error;
  }
}
