/**
 * The prepack guard (scripts/prepack.mjs): packing a public package whose build is missing or
 * stale fails, naming the package and the file, and packs nothing. Each case runs on a copy of
 * @hookgate/memory in a temporary directory laid out as the repository is (`packages/memory`
 * beside `scripts/prepack.mjs`), so nothing is written in the real packages.
 */
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const GUARD = join(ROOT, 'scripts', 'prepack.mjs');
const WIRED = 'node ../../scripts/prepack.mjs';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A copy of packages/memory without dist/, its sources an hour old; returns its directory. */
function copyOfMemory(): string {
  const root = mkdtempSync(join(tmpdir(), 'hookgate-prepack-'));
  made.push(root);
  const dir = join(root, 'packages', 'memory');
  mkdirSync(join(root, 'scripts'), { recursive: true });
  cpSync(GUARD, join(root, 'scripts', 'prepack.mjs'));
  const source = join(ROOT, 'packages', 'memory');
  for (const entry of ['src', 'README.md', 'LICENSE']) {
    cpSync(join(source, entry), join(dir, entry), { recursive: true });
  }
  // Outside the workspace, `workspace:^` cannot be resolved: the copy packs without dependencies.
  const { dependencies, devDependencies, ...pkg } = JSON.parse(
    readFileSync(join(source, 'package.json'), 'utf8'),
  );
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  for (const file of sourceFiles(dir)) touch(join(dir, 'src', file), -3_600);
  return dir;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(dir, 'src'), { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.ts'));
}

/** Set a file's times `seconds` from now. */
function touch(file: string, seconds: number): void {
  const at = Date.now() / 1000 + seconds;
  utimesSync(file, at, at);
}

/** A build: `dist/<name>.js` and `.d.ts` for every source, newer than all of them. */
function build(dir: string): void {
  for (const file of sourceFiles(dir)) {
    for (const extension of ['.js', '.d.ts']) {
      const built = join(dir, 'dist', file.replace(/\.ts$/, extension));
      mkdirSync(dirname(built), { recursive: true });
      writeFileSync(built, '// built\n');
    }
  }
}

/** Run the package's own `prepack` script, as `pnpm pack` does. */
function prepack(dir: string) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return spawnSync('sh', ['-c', pkg.scripts.prepack], { cwd: dir, encoding: 'utf8' });
}

/** `pnpm pack` of the copy, into `out/` beside it. */
function pack(dir: string) {
  const out = join(dir, '..', 'out');
  const run = spawnSync('pnpm', ['pack', '--pack-destination', out], {
    cwd: dir,
    encoding: 'utf8',
  });
  const tarballs = existsSync(out) ? readdirSync(out) : [];
  return { status: run.status, output: run.stdout + run.stderr, tarballs };
}

describe('the prepack guard', () => {
  it('pnpm pack of an unbuilt package fails, says it is not built, and packs nothing', () => {
    const dir = copyOfMemory();
    const packed = pack(dir);
    expect(packed.status).not.toBe(0);
    expect(packed.output).toContain(
      '@hookgate/memory: cannot pack: ./dist/index.d.ts does not exist (the package is not built)',
    );
    expect(packed.output).toContain('Run `pnpm build` at the repository root first.');
    expect(packed.tarballs).toEqual([]);
  });

  it('pnpm pack of a built package passes the guard and packs dist/', () => {
    const dir = copyOfMemory();
    build(dir);
    const packed = pack(dir);
    expect(packed.output).not.toContain('cannot pack');
    expect(packed.status).toBe(0);
    expect(packed.tarballs).toEqual(['hookgate-memory-0.1.0.tgz']);
    const listed = spawnSync('tar', ['-tzf', join(dir, '..', 'out', packed.tarballs[0]!)], {
      encoding: 'utf8',
    });
    expect(listed.stdout.split('\n')).toEqual(
      expect.arrayContaining(['package/dist/index.js', 'package/dist/index.d.ts']),
    );
  });

  it('exits 1 on a build older than a source, naming the file', () => {
    const dir = copyOfMemory();
    build(dir);
    touch(join(dir, 'src', 'index.ts'), 60);
    const run = prepack(dir);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      '@hookgate/memory: cannot pack: ./dist/index.d.ts is older than src/ (a stale build)',
    );
  });

  it('exits 1 on a built file whose source was removed', () => {
    const dir = copyOfMemory();
    build(dir);
    writeFileSync(join(dir, 'dist', 'removed.js'), '// built from a source since removed\n');
    const run = prepack(dir);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('cannot pack: dist/removed.js has no source in src/');
  });

  it('exits 0, silently, on a fresh build', () => {
    const dir = copyOfMemory();
    build(dir);
    const run = prepack(dir);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('is the prepack script of every public package', () => {
    const packages = readdirSync(join(ROOT, 'packages'))
      .map((name) => JSON.parse(readFileSync(join(ROOT, 'packages', name, 'package.json'), 'utf8')))
      .filter((pkg) => pkg.private !== true);
    expect(packages.length).toBeGreaterThan(10);
    expect(packages.filter((pkg) => pkg.scripts?.prepack !== WIRED).map((pkg) => pkg.name)).toEqual(
      [],
    );
  });
});
