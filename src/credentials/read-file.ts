import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** Largest secrets file (or App private key file) read; a bigger one (or a device, a FIFO, a directory) is refused. */
const MAX_SECRETS_FILE_BYTES = 1024 * 1024;

/** Reads a regular file of at most MAX_SECRETS_FILE_BYTES; anything else is refused before it is read. */
export async function readRegularFile(path: string): Promise<string> {
  // O_NONBLOCK: opening a FIFO does not wait for a writer (and fstat then refuses it).
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch((error: NodeJS.ErrnoException) => {
    throw new Error(`cannot be opened (${error.code ?? 'error'})`);
  });
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new Error('is not a regular file');
    if (info.size > MAX_SECRETS_FILE_BYTES) throw new Error(`is larger than ${MAX_SECRETS_FILE_BYTES} bytes`);
    const buffer = Buffer.alloc(MAX_SECRETS_FILE_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > MAX_SECRETS_FILE_BYTES) throw new Error(`is larger than ${MAX_SECRETS_FILE_BYTES} bytes`);
    }
    return buffer.toString('utf8', 0, length);
  } finally {
    await handle.close();
  }
}
