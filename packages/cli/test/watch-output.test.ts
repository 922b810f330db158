/** What docs/cli.md says `watch` prints of a payload's characters, line by line. */
import { expect, it } from 'vitest';
import { formatDecision, type WatchedDecision } from '../src/watch-output.js';

const decision: WatchedDecision = {
  id: 1,
  at: '2026-01-02T03:04:05.678Z',
  decision: 'new',
  namespace: 'hookgate',
  key: 'evt:a\nb\rc\td\be\ff\u001b[31m\u007f\u202e\u2028\u2029\u{e0041}',
  writer: 'w',
  seq: 1,
};

it('--json escapes with JSON escapes where JSON has one, \\u escapes otherwise, and stays JSON', () => {
  const printed = formatDecision(decision, true);
  expect(printed).toContain(
    '"key":"evt:a\\nb\\rc\\td\\be\\ff\\u001b[31m\\u007f\\u202e\\u2028\\u2029\\udb40\\udc41"',
  );
  expect(printed).not.toMatch(/[\p{Cc}\p{Cf}\u2028\u2029]/u);
  expect(JSON.parse(printed)).toEqual(decision);
});

it('text escapes \\n, \\r and \\t by name and every other such character as \\u escapes', () => {
  const printed = formatDecision(decision, false);
  expect(printed).toBe(
    '2026-01-02T03:04:05.678Z  new                ' +
      'evt:a\\nb\\rc\\td\\u0008e\\u000cf\\u001b[31m\\u007f\\u202e\\u2028\\u2029\\udb40\\udc41  -',
  );
});
