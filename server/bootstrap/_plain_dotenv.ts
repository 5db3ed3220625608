/**
 * The plain subset of dotenv that `init` writes: `NAME=value` lines with no quotes, blanks,
 * escapes or trailing comments, `#` comment lines and empty lines. A file in this subset is
 * parsed here; any other file goes to `npm:dotenv`. dotenv is CommonJS, and loading it makes
 * Deno start its Node compatibility layer, which cost a restarted `serve` about 40 ms of its
 * start. `tests/bootstrap/plain_dotenv_test.ts` checks that both parsers agree on every file of
 * the subset.
 *
 * @module
 */

/** One assignment of the subset: a shell-style name, `=`, then characters dotenv keeps as is. */
const PLAIN_ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=([A-Za-z0-9_.,:;+/=@%~^-]*)$/;

/**
 * Parses `text` when every line is empty, a comment starting in the first column, or a plain
 * `NAME=value` assignment (the value made of letters, digits and `_.,:;+/=@%~^-`); a later
 * assignment of a name wins, as in dotenv. Returns null for any other text: it is then dotenv's
 * to parse.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePlainDotenv } from "./_plain_dotenv.ts";
 * assert.deepEqual(parsePlainDotenv("# note\nA=1\nB=x,y\n"), { A: "1", B: "x,y" });
 * assert.equal(parsePlainDotenv('A="quoted"\n'), null);
 * ```
 */
export function parsePlainDotenv(text: string): Record<string, string> | null {
  const values: Record<string, string> = {};
  for (const line of text.split(/\r\n|\r|\n/)) {
    if (line === "" || line.charCodeAt(0) === 0x23 /* # */) continue;
    const match = PLAIN_ASSIGNMENT.exec(line);
    // `__proto__` would not become a property: leave that oddity to dotenv.
    if (match === null || match[1] === "__proto__") return null;
    values[match[1]] = match[2];
  }
  return values;
}
