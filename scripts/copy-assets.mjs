// Copies non-TypeScript assets (Lua scripts, SQL) from src/ to dist/ after tsc.
import { cpSync, readdirSync, statSync } from 'node:fs';
import { join, extname } from 'node:path';

const ASSET_EXTENSIONS = new Set(['.lua', '.sql']);

function copyAssets(from, to) {
  for (const entry of readdirSync(from)) {
    const source = join(from, entry);
    const target = join(to, entry);
    if (statSync(source).isDirectory()) copyAssets(source, target);
    else if (ASSET_EXTENSIONS.has(extname(entry))) cpSync(source, target);
  }
}

copyAssets('src', 'dist');
