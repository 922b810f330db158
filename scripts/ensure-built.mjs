// `pnpm bench` measures the built packages, the JavaScript users install, not the TypeScript
// sources through tsx (whose esbuild output differs: `__name` wrappers, other inlining). This
// runs `pnpm build` first when a package's dist/ is missing or older than its src/, and does
// nothing otherwise.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const newest = (dir) =>
  readdirSync(dir, { recursive: true })
    .map((file) => statSync(join(dir, String(file))))
    .filter((stat) => stat.isFile())
    .reduce((latest, stat) => Math.max(latest, stat.mtimeMs), 0);

const stale = readdirSync('packages').filter((name) => {
  const dir = join('packages', name);
  if (!existsSync(join(dir, 'src')) || !existsSync(join(dir, 'tsconfig.json'))) return false;
  const built = join(dir, 'dist', 'index.js');
  return !existsSync(built) || statSync(built).mtimeMs < newest(join(dir, 'src'));
});
if (stale.length > 0) {
  console.error(`[bench] building first (stale or missing dist/: ${stale.join(', ')})`);
  const { status } = spawnSync('pnpm', ['build'], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (status !== 0) process.exit(status ?? 1);
}
