import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { UnavailableError } from '../errors.js';

/** Where `serve` keeps the admin token it generated: in the data directory, readable by its owner only. */
export const ADMIN_TOKEN_FILE = 'admin-token';

/**
 * The admin token of `forgesync serve` when none is configured: the one kept
 * in `<dataDir>/admin-token` (mode 0600) by an earlier start, else a new
 * random one written there first. The admin API never runs open.
 * @throws UnavailableError when the file cannot be read or written, or is not a private regular file.
 */
export async function generatedAdminToken(dataDir: string): Promise<{ token: string; file: string; created: boolean }> {
  const file = join(dataDir, ADMIN_TOKEN_FILE);
  await mkdir(dataDir, { recursive: true });
  try {
    const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    const token = randomBytes(32).toString('base64url');
    try {
      await handle.writeFile(`${token}\n`);
    } finally {
      await handle.close();
    }
    return { token, file, created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new UnavailableError(`cannot create ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW).catch((error: NodeJS.ErrnoException) => {
    throw new UnavailableError(`cannot read ${file}: ${error.code ?? error}; remove it to have a new admin token generated`);
  });
  try {
    const info = await handle.stat();
    if (!info.isFile() || (info.mode & 0o077) !== 0 || info.size > 1024) {
      throw new UnavailableError(`${file} must be a regular file readable by its owner only (chmod 600); remove it to have a new admin token generated`);
    }
    const token = (await handle.readFile('utf8')).trim();
    if (token.length < 16) throw new UnavailableError(`${file} holds no usable token; remove it to have a new one generated`);
    return { token, file, created: false };
  } finally {
    await handle.close();
  }
}
