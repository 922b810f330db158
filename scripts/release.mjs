// `pnpm release`: build, prove the tarballs (the pack test), publish every public package
// with `pnpm publish -r` (which rewrites workspace: ranges and applies publishConfig), then
// tag the release. `pnpm release --dry-run` does everything but the upload and the tags.
//
// The flow: each change that users should hear about adds a changeset (`pnpm changeset`);
// `pnpm changeset version` turns them into versions and CHANGELOG.md entries (the public
// packages move together, `fixed` in .changeset/config.json); commit that; `pnpm release`.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const dryRun = process.argv.includes('--dry-run');
const run = (command, args) => execFileSync(command, args, { cwd: root, stdio: 'inherit' });

const publicPackages = readdirSync(join(root, 'packages'))
  .map((dir) => JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8')))
  .filter((pkg) => !pkg.private)
  .map((pkg) => pkg.name)
  .sort();
const config = JSON.parse(readFileSync(join(root, '.changeset', 'config.json'), 'utf8'));
const fixed = [...(config.fixed[0] ?? [])].sort();
if (fixed.join() !== publicPackages.join()) {
  console.error(
    `release: .changeset/config.json's fixed group must list every public package:\n` +
      `  public: ${publicPackages.join(', ')}\n  fixed:  ${fixed.join(', ')}`,
  );
  process.exit(1);
}
const pending = readdirSync(join(root, '.changeset')).filter(
  (file) => file.endsWith('.md') && file !== 'README.md',
);
if (pending.length > 0 && !dryRun) {
  console.error(
    `release: unreleased changesets (${pending.join(', ')}): run \`pnpm changeset version\` and commit first`,
  );
  process.exit(1);
}

run('pnpm', ['build']);
run('node', ['scripts/pack-test.mjs']);
run('pnpm', [
  'publish',
  '-r',
  '--access',
  'public',
  ...(dryRun ? ['--dry-run', '--no-git-checks'] : []),
]);
if (!dryRun) run('pnpm', ['changeset', 'tag']);
console.log(
  `release: ${dryRun ? 'dry run passed' : 'published'} (${publicPackages.length} packages)`,
);
