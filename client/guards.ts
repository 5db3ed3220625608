/**
 * The small type guards every client module shares, so each wire reader narrows unknown JSON the
 * same way. Internal to the package: shared by `client/` and its subfolders, not exported from
 * any entry point.
 *
 * @module
 */

/** Whether a value is a plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The value when it is a string, else undefined. */
export function stringOr(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The value when it is a plain JSON object, else undefined. */
export function objectOr(value: unknown): Record<string, unknown> | undefined {
  return isObject(value) ? value : undefined;
}
