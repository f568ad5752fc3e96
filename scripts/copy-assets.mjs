// Copies non-TypeScript assets from src/ to dist/ after tsc: Lua scripts, SQL and
// plain CommonJS worker scripts (.cjs) anywhere, and the dashboard's static files
// (HTML, plain browser JS, CSS) from src/server/dashboard only, so no compiled or
// stray .js elsewhere is touched.
import { cpSync, readdirSync, statSync } from 'node:fs';
import { extname, join, sep } from 'node:path';

const ASSET_EXTENSIONS = new Set(['.lua', '.sql', '.cjs']);
const DASHBOARD_DIR = join('src', 'server', 'dashboard');
const DASHBOARD_EXTENSIONS = new Set(['.html', '.js', '.css']);

function isAsset(source) {
  const extension = extname(source);
  if (ASSET_EXTENSIONS.has(extension)) return true;
  return source.startsWith(DASHBOARD_DIR + sep) && DASHBOARD_EXTENSIONS.has(extension);
}

function copyAssets(from, to) {
  for (const entry of readdirSync(from)) {
    const source = join(from, entry);
    const target = join(to, entry);
    if (statSync(source).isDirectory()) copyAssets(source, target);
    else if (isAsset(source)) cpSync(source, target);
  }
}

copyAssets('src', 'dist');
