/**
 * Strict RFC 3339 timestamps, as used by `x-deadline` and principal expiries.
 *
 * @module
 */

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** `0`..`9` as 0..9, anything else as -1: the text is scanned once, without a regular expression. */
function digit(text: string, at: number): number {
  const code = text.charCodeAt(at) - 48;
  return code >= 0 && code <= 9 ? code : -1;
}

/** Two digits at `at` as a number, or -1. */
function twoDigits(text: string, at: number): number {
  const high = digit(text, at);
  const low = digit(text, at + 1);
  return high < 0 || low < 0 ? -1 : high * 10 + low;
}

/**
 * Parses an RFC 3339 date-time (`2026-07-23T12:00:00Z`, fractions and offsets allowed) into ms
 * since the epoch, or returns null when the text is not one. Dates that do not exist (such as
 * February 30) are refused rather than rolled over.
 *
 * The accepted form is exactly `YYYY-MM-DD`, `T` or `t`, `hh:mm:ss`, an optional fraction of 1
 * to 9 digits, then `Z`, `z` or `+hh:mm` / `-hh:mm`; digits are ASCII only. Fractions are
 * truncated to the millisecond and a leap second (`:60`) counts as `:59`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRfc3339 } from "./time.ts";
 * assert.equal(parseRfc3339("2026-07-23T12:00:00Z"), 1784808000000);
 * assert.equal(parseRfc3339("tomorrow"), null);
 * ```
 */
export function parseRfc3339(text: string): number | null {
  const length = text.length;
  // The shortest form is `YYYY-MM-DDThh:mm:ssZ` (20), the longest has 9 fraction digits and an
  // offset (35).
  if (length < 20 || length > 35) return null;
  const century = twoDigits(text, 0);
  const yearLow = twoDigits(text, 2);
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  const second = twoDigits(text, 17);
  if (
    century < 0 || yearLow < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 ||
    second < 0 || text.charCodeAt(4) !== 45 /* - */ || text.charCodeAt(7) !== 45 ||
    (text.charCodeAt(10) | 0x20) !== 116 /* T or t */ || text.charCodeAt(13) !== 58 /* : */ ||
    text.charCodeAt(16) !== 58
  ) {
    return null;
  }
  let at = 19;
  let fraction = 0;
  if (text.charCodeAt(at) === 46 /* . */) {
    const start = at + 1;
    let end = start;
    while (end < length && digit(text, end) >= 0) end++;
    const digits = end - start;
    if (digits < 1 || digits > 9) return null;
    if (digits <= 3) {
      // Exact: for up to three digits the integer equals the truncated milliseconds.
      let value = 0;
      for (let i = start; i < end; i++) value = value * 10 + digit(text, i);
      fraction = digits === 1 ? value * 100 : digits === 2 ? value * 10 : value;
    } else {
      fraction = Math.floor(Number(text.slice(at, end)) * 1000);
    }
    at = end;
  }
  let offsetMinutes = 0;
  const zone = text.charCodeAt(at);
  if ((zone | 0x20) === 122 /* Z or z */) {
    if (at + 1 !== length) return null;
  } else if (zone === 43 /* + */ || zone === 45 /* - */) {
    if (at + 6 !== length || text.charCodeAt(at + 3) !== 58) return null;
    const offsetHour = twoDigits(text, at + 1);
    const offsetMinute = twoDigits(text, at + 4);
    if (offsetHour < 0 || offsetMinute < 0) return null;
    if (offsetHour > 23 || offsetMinute > 59) return null;
    offsetMinutes = (offsetHour * 60 + offsetMinute) * (zone === 45 ? -1 : 1);
  } else {
    return null;
  }
  const year = century * 100 + yearLow;
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]) return null;
  if (month === 2 && day === 29 && !isLeapYear(year)) return null;
  if (hour > 23 || minute > 59 || second > 60) return null;
  const utc = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59), fraction);
  return utc - offsetMinutes * 60_000;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}
