/**
 * Strict RFC 3339 timestamps, as used by `x-deadline` and principal expiries.
 *
 * @module
 */

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Parses an RFC 3339 date-time (`2026-07-23T12:00:00Z`, fractions and offsets allowed) into ms
 * since the epoch, or returns null when the text is not one. Dates that do not exist (such as
 * February 30) are refused rather than rolled over.
 *
 * @example
 * ```ts
 * import { parseRfc3339 } from "./time.ts";
 * console.log(parseRfc3339("2026-07-23T12:00:00Z")); // 1784808000000
 * console.log(parseRfc3339("tomorrow")); // null
 * ```
 */
export function parseRfc3339(text: string): number | null {
  const match = RFC3339.exec(text);
  if (match === null) return null;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  const hour = Number(match[4]);
  const minute = Number(match[5]);
  const second = Number(match[6]);
  if (month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]) return null;
  if (month === 2 && day === 29 && !isLeapYear(year)) return null;
  if (hour > 23 || minute > 59 || second > 60) return null;
  let offsetMinutes = 0;
  if (match[8] !== undefined) {
    const offsetHour = Number(match[9]);
    const offsetMinute = Number(match[10]);
    if (offsetHour > 23 || offsetMinute > 59) return null;
    offsetMinutes = (offsetHour * 60 + offsetMinute) * (match[8] === "-" ? -1 : 1);
  }
  const fraction = match[7] === undefined ? 0 : Math.floor(Number(match[7]) * 1000);
  const utc = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59), fraction);
  return utc - offsetMinutes * 60_000;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}
