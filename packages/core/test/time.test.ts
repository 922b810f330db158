import { describe, expect, it } from 'vitest';
import { parseTimestamp } from '../src/index.js';

describe('parseTimestamp', () => {
  it.each([
    ['2024-03-01T12:00:00Z', Date.UTC(2024, 2, 1, 12)],
    ['2024-03-01T12:00:00.123456Z', Date.UTC(2024, 2, 1, 12, 0, 0, 123)],
    ['2024-03-01T12:00:00+02:00', Date.UTC(2024, 2, 1, 10)],
    ['2024-03-01T12:00:00-0530', Date.UTC(2024, 2, 1, 17, 30)],
    ['2024-03-01 12:00:00z', Date.UTC(2024, 2, 1, 12)],
    ['2024-03-01T12:00:00', Date.UTC(2024, 2, 1, 12)],
    ['2024-03-01T12:00', Date.UTC(2024, 2, 1, 12)],
    ['2024-03-01', Date.UTC(2024, 2, 1)],
    ['2024-02-29T00:00:00Z', Date.UTC(2024, 1, 29)],
    [1_700_000_000, 1_700_000_000_000],
    [1_700_000_000.5, 1_700_000_000_500],
    [1_700_000_000_123, 1_700_000_000_123],
    ['1700000000', 1_700_000_000_000],
    [' 1700000000123 ', 1_700_000_000_123],
    [0, 0],
  ])('reads %j as %d ms', (input, expected) => {
    expect(parseTimestamp(input)).toBe(expected);
  });

  it('reads a time without an offset as UTC whatever the local zone', () => {
    expect(parseTimestamp('2024-06-01T00:00:00')).toBe(parseTimestamp('2024-06-01T00:00:00Z'));
  });

  it.each([
    'yesterday',
    '',
    '2024-13-01T00:00:00Z',
    '2023-02-29T00:00:00Z',
    '2024-03-01T24:00:00Z',
    '2024-03-01T12:60:00Z',
    '2024-03-01T12:00:00+25:00',
    '12/03/2024',
    'Mon, 04 Mar 2024 10:00:00 GMT',
    -1,
    -1_700_000_000,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    1e20,
    '99999-01-01T00:00:00Z',
    null,
    undefined,
    true,
    {},
    [1_700_000_000],
  ])('refuses %j', (input) => {
    expect(parseTimestamp(input)).toBeUndefined();
  });
});
