/**
 * Deterministic bytes for the fake's downloadable files (attachments, release
 * assets, avatars): valid PNG and ZIP files and plain text, all derived from a
 * seed string so the same URL always serves the same bytes.
 */
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = (CRC_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** `size` bytes of printable text derived from `seed` (a sha256 chain, hex). */
function filler(seed: string, size: number): Buffer {
  const chunks: Buffer[] = [];
  let length = 0;
  let block = seed;
  while (length < size) {
    block = createHash('sha256').update(block).digest('hex');
    const line = Buffer.from(`${block}\n`);
    chunks.push(line);
    length += line.length;
  }
  return Buffer.concat(chunks).subarray(0, Math.max(0, size));
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** A valid 4×4 PNG whose colour comes from the seed, padded with a tEXt chunk to about `size` bytes. */
export function pngBytes(seed: string, size = 256): Buffer {
  const digest = createHash('sha256').update(seed).digest();
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(4, 0);
  ihdr.writeUInt32BE(4, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  const rows: Buffer[] = [];
  for (let y = 0; y < 4; y++) {
    const row = Buffer.alloc(1 + 4 * 3);
    for (let x = 0; x < 4; x++) digest.copy(row, 1 + x * 3, (x + y) % 8, ((x + y) % 8) + 3);
    rows.push(row);
  }
  const parts = [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk('IHDR', ihdr), pngChunk('IDAT', deflateSync(Buffer.concat(rows)))];
  const end = pngChunk('IEND', Buffer.alloc(0));
  const used = parts.reduce((n, part) => n + part.length, 0) + end.length + 12 + 8;
  const text = Buffer.concat([Buffer.from('Comment\0', 'latin1'), filler(seed, Math.max(0, size - used))]);
  return Buffer.concat([...parts, pngChunk('tEXt', text), end]);
}

/** A valid ZIP archive holding one stored (uncompressed) text file. */
export function zipBytes(seed: string, size = 512, entryName = 'README.txt'): Buffer {
  const name = Buffer.from(entryName);
  const overhead = 30 + 46 + 22 + 2 * name.length;
  const data = filler(seed, Math.max(16, size - overhead));
  const crc = crc32(data);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(10, 4); // version needed
  local.writeUInt16LE(0, 8); // stored
  local.writeUInt16LE(0x21, 12); // DOS date 1980-01-01
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(name.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(10, 6);
  central.writeUInt16LE(0x21, 14);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(name.length, 28);
  central.writeUInt32LE(0, 42); // local header offset
  const centralOffset = local.length + name.length + data.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + name.length, 12);
  end.writeUInt32LE(centralOffset, 16);
  return Buffer.concat([local, name, data, central, name, end]);
}

export function textBytes(seed: string, size = 128): Buffer {
  return Buffer.concat([Buffer.from(`${seed}\n`), filler(seed, Math.max(0, size - seed.length - 1))]);
}

/** The bytes for a file of the given content type. */
export function fileBytes(contentType: string, seed: string, size?: number): Buffer {
  if (contentType === 'image/png') return pngBytes(seed, size);
  if (contentType === 'application/zip') return zipBytes(seed, size);
  return textBytes(seed, size);
}

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}
