/** Numbers below this are unix seconds, above it milliseconds (1e11 s is the year 5138). */
const SECONDS_LIMIT = 1e11;
/** 9999-12-31T23:59:59.999Z: later than this is not a time any provider stamps. */
const MAX_TIME = 253_402_300_799_999;

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?)?$/;
const NUMERIC = /^\d+(?:\.\d+)?$/;

/**
 * Parse a provider's event time into epoch milliseconds.
 *
 * Accepts ISO 8601 / RFC 3339 strings (a time without an offset is UTC, a bare date is
 * midnight UTC, fractions finer than a millisecond are truncated), unix seconds or
 * milliseconds as numbers or digit strings (below 1e11 is seconds), and `Date` objects.
 *
 * @returns the time, or `undefined` when the value is not a time: garbage, negative, a
 * calendar date that does not exist, or after the year 9999.
 */
export function parseTimestamp(value: unknown): number | undefined {
  if (typeof value === 'number') return fromNumber(value);
  if (typeof value === 'string') {
    const text = value.trim();
    if (NUMERIC.test(text)) return fromNumber(Number(text));
    return fromIso(text);
  }
  if (value instanceof Date) return inRange(value.getTime());
  return undefined;
}

function fromNumber(value: number): number | undefined {
  if (!Number.isFinite(value) || value < 0) return undefined;
  return inRange(Math.round(value < SECONDS_LIMIT ? value * 1000 : value));
}

function fromIso(text: string): number | undefined {
  const m = ISO.exec(text);
  if (m === null) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4] ?? 0);
  const minute = Number(m[5] ?? 0);
  const second = Number(m[6] ?? 0);
  const millis = Number((m[7] ?? '').slice(0, 3).padEnd(3, '0'));
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  // RFC 3339 allows a leap second (:60); it lands on the next second, as in Date.
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  let offset = 0;
  if (m[9] !== undefined) {
    const offsetHours = Number(m[10]);
    const offsetMinutes = Number(m[11]);
    if (offsetHours > 23 || offsetMinutes > 59) return undefined;
    offset = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  }
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day); // Date.UTC would map years 0–99 onto 1900–1999
  utc.setUTCHours(hour, minute, second, millis);
  return inRange(utc.getTime() - offset);
}

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

function inRange(time: number): number | undefined {
  return Number.isFinite(time) && time >= 0 && time <= MAX_TIME ? time : undefined;
}
