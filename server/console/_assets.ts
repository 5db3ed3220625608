/**
 * The console's files, part of the module graph as text imports (so `deno compile` embeds them
 * and `deno publish` ships them beside the code), with their content types, and the version
 * that names this set of files in their URLs: the first 16 hex digits of a SHA-256 over every
 * file, so a changed file gets a new URL and a browser never mixes two versions.
 *
 * The page (`index.html`) is a template: `{{assets}}` becomes the version, `"{{config}}"` the
 * JSON the page reads its service constants from (the interface version, the run states and
 * the audit actions of `wire/`), so the console repeats none of them.
 *
 * @module
 */
import { AUDIT_ACTIONS, INTERFACE_VERSION, RUN_STATES } from "../../wire/mod.ts";
import { sha256Hex } from "../digest.ts";
import PAGE from "./index.html" with { type: "text" };
import ACTIVITY from "./activity.js" with { type: "text" };
import APP from "./app.js" with { type: "text" };
import API from "./api.js" with { type: "text" };
import AUDIT from "./audit.js" with { type: "text" };
import DOM from "./dom.js" with { type: "text" };
import INBOX from "./inbox.js" with { type: "text" };
import PAGED from "./paged.js" with { type: "text" };
import REQUESTS from "./requests.js" with { type: "text" };
import RUNS from "./runs.js" with { type: "text" };
import CSS from "./console.css" with { type: "text" };
import ICON from "./icon.svg" with { type: "text" };

/** One file of the console, ready to answer. */
export interface ConsoleFile {
  /** The bytes. */
  readonly body: Uint8Array<ArrayBuffer>;
  /** Its `content-type`. */
  readonly type: string;
  /** Its strong `etag`, quoted. */
  readonly etag: string;
}

/** The console's files. */
export interface ConsoleAssets {
  /** The version in the files' URLs (`/console/<version>/app.js`). */
  readonly version: string;
  /** The page, with the version and the config filled in. */
  readonly page: ConsoleFile;
  /** The versioned files by name. */
  readonly files: ReadonlyMap<string, ConsoleFile>;
}

const JS = "text/javascript; charset=utf-8";

/** The versioned files: name, text, content type. */
const SOURCES: readonly (readonly [string, string, string])[] = [
  ["activity.js", ACTIVITY, JS],
  ["app.js", APP, JS],
  ["api.js", API, JS],
  ["audit.js", AUDIT, JS],
  ["dom.js", DOM, JS],
  ["inbox.js", INBOX, JS],
  ["paged.js", PAGED, JS],
  ["requests.js", REQUESTS, JS],
  ["runs.js", RUNS, JS],
  ["console.css", CSS, "text/css; charset=utf-8"],
  ["icon.svg", ICON, "image/svg+xml"],
];

const encoder = new TextEncoder();

function file(text: string, type: string): ConsoleFile {
  return { body: encoder.encode(text), type, etag: `"${sha256Hex(text).slice(0, 32)}"` };
}

/** JSON safe inside a `<script type="application/json">` element: no `<`, `>` or `&`. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * Builds the console's files (once per process: the caller keeps them).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { consoleAssets } from "./_assets.ts";
 * const assets = consoleAssets();
 * assert.match(assets.version, /^[0-9a-f]{16}$/);
 * const page = new TextDecoder().decode(assets.page.body);
 * assert.ok(page.includes(`./${assets.version}/app.js`));
 * assert.equal(assets.files.get("app.js")?.type, "text/javascript; charset=utf-8");
 * ```
 */
export function consoleAssets(): ConsoleAssets {
  const config = scriptJson({
    interfaceVersion: INTERFACE_VERSION,
    runStates: RUN_STATES,
    auditActions: AUDIT_ACTIONS,
  });
  const version = sha256Hex(
    [PAGE, config, ...SOURCES.map(([name, text]) => `${name}\0${text}`)].join("\0"),
  ).slice(0, 16);
  const page = PAGE.replaceAll("{{assets}}", version).replace(`"{{config}}"`, config);
  return {
    version,
    page: file(page, "text/html; charset=utf-8"),
    files: new Map(SOURCES.map(([name, text, type]) => [name, file(text, type)])),
  };
}
