import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));

interface Result {
  ancestorTitles: string[];
  fullName: string;
  status: string;
}

/** Failed test names per suite, from one run of the suite against the broken stores. */
let failures: Map<string, string[]>;
let passed: Map<string, number>;

beforeAll(async () => {
  const out = mkdtempSync(join(tmpdir(), 'hookgate-conformance-'));
  const report = join(out, 'report.json');
  try {
    await run(
      process.execPath,
      [
        join(dirname(fileURLToPath(import.meta.resolve('vitest/package.json'))), 'vitest.mjs'),
        'run',
        '--root',
        fixtures,
        '--config',
        join(fixtures, 'vitest.config.ts'),
        '--reporter=json',
        `--outputFile=${report}`,
      ],
      { cwd: fixtures, timeout: 90_000 },
    ).catch((error: { code?: number }) => {
      // Exit code 1 is failing tests, which is the point; anything else is a crash.
      if (error.code !== 1) throw error;
    });
    const results: Result[] = JSON.parse(readFileSync(report, 'utf8')).testResults.flatMap(
      (file: { assertionResults: Result[] }) => file.assertionResults,
    );
    failures = new Map();
    passed = new Map();
    for (const { ancestorTitles, fullName, status } of results) {
      const suite = ancestorTitles[0]!;
      if (status === 'failed') failures.set(suite, [...(failures.get(suite) ?? []), fullName]);
      else if (status === 'passed') passed.set(suite, (passed.get(suite) ?? 0) + 1);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}, 120_000);

const failed = (suite: string) => (failures.get(suite) ?? []).join('\n');

describe('the conformance suite', () => {
  it('passes a correct store, errors included', () => {
    expect(failed('correct')).toBe('');
    expect(passed.get('correct')).toBeGreaterThan(40);
  });

  it('writes every key under keyPrefix', () => {
    expect(failed('under a keyPrefix')).toBe('');
    expect(passed.get('under a keyPrefix')).toBeGreaterThan(40);
  });

  it('catches a release that does not check the owner', () => {
    expect(failed('release without owner check')).toMatch(/ownership .*release by another token/);
  });

  it('catches a claim that is not atomic', () => {
    expect(failed('claim as get-then-set')).toMatch(/claim .*exactly one of many concurrent/);
  });

  it('catches a claim that drops its TTL', () => {
    expect(failed('claim without TTL')).toMatch(/ttl .*claim TTL passes/);
  });

  it('catches a done that is not idempotent for its owner', () => {
    expect(failed('done not idempotent')).toMatch(/ownership .*done is idempotent/);
  });

  it("catches an advance that makes an event's retry stale to itself", () => {
    expect(failed('advance without the retry rule')).toMatch(/watermark .*not stale to itself/);
  });

  it('catches a done that refuses an absent key', () => {
    expect(failed('done refusing an absent key')).toMatch(/ownership .*done on an absent key/);
  });

  it('catches an advance that does not hold the subject', () => {
    expect(failed('advance without a hold')).toMatch(/hold .*newer event is held/);
  });

  it('catches an advance that overwrites a record it does not recognise', () => {
    expect(failed('advance overwriting a foreign record')).toMatch(
      /foreign records .*sequence operations on a claim record/,
    );
  });

  it('catches a done that drops the fingerprint', () => {
    expect(failed('done dropping the fingerprint')).toMatch(
      /fingerprint .*done record keeps the fingerprint/,
    );
  });

  it('catches a forget that leaves a done record', () => {
    expect(failed('forget that spares a done record')).toMatch(
      /inspect and forget .*forgets a done record/,
    );
  });

  it('catches an inspect that changes the record it reads', () => {
    expect(failed('inspect that renews the claim')).toMatch(/inspect and forget .*changes nothing/);
  });

  it('catches a store that resolves with a guess when unreachable', () => {
    const names = failed('guessing when unreachable');
    const operations = ['claim', 'done', 'release', 'extend', 'advance', 'releaseHold'];
    for (const operation of [...operations, 'extendHold', 'inspect', 'forget']) {
      expect(names).toMatch(new RegExp(`errors ${operation} on an unreachable store`));
    }
  });
});
