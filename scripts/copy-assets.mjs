// Copies non-TypeScript assets from src/ to dist/ after tsc: Lua scripts, SQL and
// plain CommonJS worker scripts (.cjs) anywhere, and the dashboard's static files
// (HTML, plain browser JS, CSS) from the `dashboard` folders one level below src/
// only (src/server/dashboard: the shell; src/<capability>/dashboard: its pages),
// so no compiled or stray .js elsewhere is touched.
import { cpSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';

const ASSET_EXTENSIONS = new Set(['.lua', '.sql', '.cjs']);
const DASHBOARD_EXTENSIONS = new Set(['.html', '.js', '.css']);

function isAsset(source) {
  const extension = extname(source);
  if (ASSET_EXTENSIONS.has(extension)) return true;
  const [, folder, file, ...deeper] = relative('src', source).split(sep);
  return folder === 'dashboard' && file !== undefined && deeper.length === 0 && DASHBOARD_EXTENSIONS.has(extension);
}

function copyAssets(from, to) {
  for (const entry of readdirSync(from)) {
    const source = join(from, entry);
    const target = join(to, entry);
    if (statSync(source).isDirectory()) copyAssets(source, target);
    else if (isAsset(source)) cpSync(source, target);
  }
}

// A dashboard folder in dist/ holds nothing but copies (its sources are not TypeScript): emptied first, so
// that a file deleted or moved in src/ is not served on from an old build.
for (const folder of readdirSync('dist')) {
  const dashboard = join('dist', folder, 'dashboard');
  if (existsSync(dashboard)) rmSync(dashboard, { recursive: true });
}
copyAssets('src', 'dist');
