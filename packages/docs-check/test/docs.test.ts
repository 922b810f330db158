/**
 * Every TypeScript block in docs/, README.md and the packages' READMEs is type-checked here, against the packages'
 * sources, with the repository's own compiler settings: a renamed option or a changed signature
 * breaks this test, not a reader's copy-paste. All blocks go into one TypeScript program, so the
 * whole check costs one compilation. The conventions a page can use are in docs/writing-docs.md.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/**
 * Snippets live, virtually, inside examples/: that workspace package depends on every public
 * package and on the clients and frameworks the docs show, so their imports resolve as a user's
 * would. Nothing is written to disk.
 */
const SNIPPET_DIR = join(ROOT, 'examples', '.docs-snippets');
/** The ambient names every snippet may use; compiled from examples/ too, so its imports resolve. */
const PRELUDE_SOURCE = join(ROOT, 'packages', 'docs-check', 'snippet-prelude.ts');
const PRELUDE = join(SNIPPET_DIR, '_prelude.ts');
const CHECKED = new Set(['ts', 'typescript']);

/** A piece of a snippet file, and where its first line came from. */
interface Part {
  code: string;
  file: string;
  line: number;
}

/** One virtual module: a block, the blocks it continues, and their hidden preludes. */
interface Snippet {
  id: string;
  path: string;
  parts: Part[];
}

/** A fenced block in another language that shows hookgate code: it must be a `ts` block. */
interface Unchecked {
  id: string;
  lang: string;
}

function markdownFiles(): string[] {
  const files = [join(ROOT, 'README.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (relative(ROOT, path) !== join('docs', 'api')) walk(path);
      } else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  if (existsSync(join(ROOT, 'docs'))) walk(join(ROOT, 'docs'));
  // Each package's README is its first page on npm: its snippets must compile too.
  for (const pkg of readdirSync(join(ROOT, 'packages'))) {
    const readme = join(ROOT, 'packages', pkg, 'README.md');
    if (existsSync(readme)) files.push(readme);
  }
  return files;
}

/**
 * The HTML comments right above a fence (blank lines allowed between them): `prelude: <code>`,
 * `continue`, `skip: <reason>`. They are invisible on GitHub.
 */
function directivesAbove(lines: string[], fence: number) {
  const found: { text: string; line: number }[] = [];
  let i = fence - 1;
  while (i >= 0) {
    if (lines[i]!.trim() === '') {
      i--;
      continue;
    }
    if (!lines[i]!.trimEnd().endsWith('-->')) break;
    let start = i;
    while (start >= 0 && !lines[start]!.includes('<!--')) start--;
    if (start < 0) break;
    const text = lines
      .slice(start, i + 1)
      .join('\n')
      .replace(/^[\s\S]*?<!--/, '')
      .replace(/-->\s*$/, '')
      .trim();
    found.unshift({ text, line: start + 1 });
    i = start - 1;
  }
  const preludes: Part[] = [];
  let continues = false;
  let skip: string | undefined;
  for (const { text, line } of found) {
    const m = /^(prelude|continue|skip)\b:?\s*([\s\S]*)$/.exec(text);
    if (m === null) continue;
    if (m[1] === 'prelude') preludes.push({ code: m[2]!, file: '', line });
    else if (m[1] === 'continue') continues = true;
    else skip = m[2]!.trim() || 'no reason given';
  }
  return { preludes, continues, skip };
}

function extract(files: string[]) {
  const snippets: Snippet[] = [];
  const unchecked: Unchecked[] = [];
  const skipped: { id: string; reason: string }[] = [];
  for (const file of files) {
    const rel = relative(ROOT, file);
    const lines = readFileSync(file, 'utf8').split('\n');
    let previous: Snippet | undefined;
    for (let i = 0; i < lines.length; i++) {
      const open = /^\s*(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]!);
      if (open === null) continue;
      const [, fence, lang] = open;
      let end = i + 1;
      while (end < lines.length && !lines[end]!.trim().startsWith(fence!)) end++;
      const code = lines.slice(i + 1, end).join('\n');
      const id = `${rel}:${i + 1}`;
      const { preludes, continues, skip } = directivesAbove(lines, i);
      if (skip !== undefined) skipped.push({ id, reason: skip });
      else if (CHECKED.has(lang!.toLowerCase())) {
        const parts = [
          ...preludes.map((p) => ({ ...p, file: rel })),
          { code, file: rel, line: i + 2 },
        ];
        if (continues && previous !== undefined) previous.parts.push(...parts);
        else {
          previous = {
            id,
            path: join(SNIPPET_DIR, `${rel.replaceAll('/', '__')}.L${i + 1}.ts`),
            parts,
          };
          snippets.push(previous);
        }
      } else if (
        /from ['"]@hookgate\/|require\(['"]@hookgate\/|createGate\(|gate\.run\(/.test(code)
      ) {
        unchecked.push({ id, lang: lang || '(none)' });
      }
      i = end;
    }
  }
  return { snippets, unchecked, skipped };
}

/** The module text of a snippet, and the markdown location of each of its lines. */
function render(snippet: Snippet): { text: string; origin: string[] } {
  const chunks: string[] = [];
  const origin: string[] = [];
  for (const part of snippet.parts) {
    const partLines = part.code.split('\n');
    partLines.forEach((_, k) => {
      origin.push(`${part.file}:${part.line + k}`);
    });
    chunks.push(part.code);
  }
  // Every snippet is a module, so its names never clash with another snippet's.
  chunks.push('export {};');
  return { text: chunks.join('\n') + '\n', origin };
}

function compilerOptions(): ts.CompilerOptions {
  const configPath = join(ROOT, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, ts.sys.readFile);
  if (config.error)
    throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  return { ...parsed.options, noEmit: true, incremental: false, tsBuildInfoFile: undefined };
}

/** Type-check every snippet in one program; diagnostics per snippet id, as `file:line: text`. */
function typeCheck(snippets: Snippet[]): Map<string, string[]> {
  const options = compilerOptions();
  const virtual = new Map<string, { text: string; origin: string[]; id: string }>();
  virtual.set(PRELUDE, {
    text: readFileSync(PRELUDE_SOURCE, 'utf8'),
    origin: [],
    id: '(prelude)',
  });
  for (const snippet of snippets) virtual.set(snippet.path, { ...render(snippet), id: snippet.id });
  const host = ts.createCompilerHost(options, true);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (name) => virtual.has(resolve(name)) || fileExists.call(host, name);
  host.readFile = (name) => virtual.get(resolve(name))?.text ?? readFile.call(host, name);
  host.getSourceFile = (name, language, onError, create) => {
    const v = virtual.get(resolve(name));
    return v === undefined
      ? getSourceFile.call(host, name, language, onError, create)
      : ts.createSourceFile(name, v.text, language, true);
  };
  const program = ts.createProgram({
    rootNames: [...virtual.keys()],
    options,
    host,
  });
  const results = new Map<string, string[]>([
    ['(prelude)', []],
    ...snippets.map((s) => [s.id, []] as [string, string[]]),
  ]);
  // Only the snippets and the prelude are checked; the packages have their own typecheck.
  const all = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
  for (const name of virtual.keys()) {
    const sf = program.getSourceFile(name)!;
    all.push(...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf));
  }
  const global = all.filter((d) => {
    const v = d.file && virtual.get(resolve(d.file.fileName));
    if (!v) return true;
    const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
    const where =
      v.id === '(prelude)'
        ? `${relative(ROOT, PRELUDE_SOURCE)}:${line + 1}`
        : (v.origin[line] ?? `${v.id} (end)`);
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n  ');
    results.get(v.id)!.push(`${where}: TS${d.code} ${text}`);
    return false;
  });
  // Option and global errors belong to no snippet; they are reported with the prelude's.
  results
    .get('(prelude)')!
    .push(...global.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n  ')));
  return results;
}

const files = markdownFiles();
const { snippets, unchecked, skipped } = extract(files);

describe('docs snippets', () => {
  let diagnostics: Map<string, string[]>;

  beforeAll(() => {
    diagnostics = typeCheck(snippets);
  }, 120_000);

  it('finds the TypeScript blocks of the docs', () => {
    expect(files.map((f) => relative(ROOT, f))).toContain('README.md');
    expect(snippets.length).toBeGreaterThan(10);
  });

  it('the snippet prelude compiles', () => {
    expect(diagnostics.get('(prelude)') ?? []).toEqual([]);
  });

  it.each(snippets.map((s) => [s.id]))('%s type-checks', (id) => {
    const errors = diagnostics.get(id) ?? [];
    expect(errors, `\n${errors.join('\n')}\n`).toEqual([]);
  });

  it('every block that shows hookgate code is a ts block, so that it is checked', () => {
    expect(unchecked.map((u) => `${u.id} (\`\`\`${u.lang})`)).toEqual([]);
  });

  it('every skipped block says why', () => {
    expect(skipped.filter((s) => s.reason === 'no reason given').map((s) => s.id)).toEqual([]);
  });
});

describe('docs links', () => {
  const links: { id: string; target: string }[] = [];
  for (const file of files) {
    const rel = relative(ROOT, file);
    const lines = readFileSync(file, 'utf8').split('\n');
    let inFence = false;
    lines.forEach((line, i) => {
      if (/^\s*(`{3,}|~{3,})/.test(line)) inFence = !inFence;
      if (inFence) return;
      for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/i.test(target)) continue;
        links.push({
          id: `${rel}:${i + 1}`,
          target: target.startsWith('#') ? rel + target : target,
        });
      }
    });
  }

  it('every relative link points at a file of the repository', () => {
    const broken = links.filter(({ id, target }) => {
      const path = target.split('#')[0]!;
      // docs/api/ is generated by `pnpm run docs` and not committed.
      if (path.startsWith('api/') || path.includes('/api/')) return false;
      return !existsSync(linked(id, target));
    });
    expect(broken.map(({ id, target }) => `${id} -> ${target}`)).toEqual([]);
  });

  it('every #anchor of a link to a Markdown page names one of its headings', () => {
    const broken = links.filter(({ id, target }) => {
      const anchor = target.split('#')[1];
      const file = linked(id, target);
      if (anchor === undefined || !file.endsWith('.md') || !existsSync(file)) return false;
      return !anchors(file).has(decodeURIComponent(anchor));
    });
    expect(broken.map(({ id, target }) => `${id} -> ${target}`)).toEqual([]);
  });
});

/** The file a link of the Markdown file `id` (`<path>:<line>`) points at. */
function linked(id: string, target: string): string {
  const file = id.slice(0, id.lastIndexOf(':'));
  const path = target.split('#')[0]!;
  // A same-page link (`#anchor`) is recorded with its page's path from the repository root.
  return path === file ? resolve(ROOT, path) : resolve(ROOT, dirname(file), path);
}

/** Each page's anchors, read once however many links point into it. */
const anchorsByFile = new Map<string, Set<string>>();

/**
 * The anchors GitHub gives a page's headings: lower case, punctuation but `-` and `_` dropped,
 * spaces made hyphens, and `-1`, `-2` … after a repeated one. Headings inside code fences are
 * not headings.
 */
function anchors(file: string): Set<string> {
  const known = anchorsByFile.get(file);
  if (known !== undefined) return known;
  const found = new Set<string>();
  anchorsByFile.set(file, found);
  let inFence = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*(`{3,}|~{3,})/.test(line)) inFence = !inFence;
    const heading = inFence ? undefined : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    let unique = slug;
    for (let n = 1; found.has(unique); n++) unique = `${slug}-${n}`;
    found.add(unique);
  }
  return found;
}
