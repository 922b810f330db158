// prepack guard of every public package: `pnpm pack` / `pnpm publish` of a package whose
// build is missing or older than its sources fails here, loudly, instead of shipping a
// tarball with only a README and a package.json. Run from the package's directory.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const fail = (message) => {
  console.error(
    `\n${pkg.name}: cannot pack: ${message}\nRun \`pnpm build\` at the repository root first.\n`,
  );
  process.exit(1);
};

const targets = [];
const collect = (value) => {
  if (typeof value === 'string') targets.push(value);
  else if (value && typeof value === 'object') Object.values(value).forEach(collect);
};
collect(pkg.publishConfig?.exports ?? pkg.exports);
if (targets.length === 0) fail('package.json names no exports');

const newest = (dir) =>
  readdirSync(dir, { recursive: true })
    .map((file) => statSync(join(dir, file)))
    .filter((stat) => stat.isFile())
    .reduce((latest, stat) => Math.max(latest, stat.mtimeMs), 0);

const sources = newest('src');
for (const target of targets) {
  if (!existsSync(target)) fail(`${target} does not exist (the package is not built)`);
  if (statSync(target).mtimeMs < sources) fail(`${target} is older than src/ (a stale build)`);
}

// Files a removed source left behind in dist/ would ship too.
for (const file of readdirSync('dist', { recursive: true })) {
  const source = String(file).replace(/(\.d)?\.js(\.map)?$|\.d\.ts(\.map)?$/, '.ts');
  if (source.endsWith('.ts') && !existsSync(join('src', source))) {
    fail(`dist/${file} has no source in src/ (a stale build)`);
  }
}
