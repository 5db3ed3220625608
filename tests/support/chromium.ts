/**
 * Debian's Chromium for the browser tests, and the flags that keep it from reaching for the
 * network on its own (the machines running the tests have no network but the registries).
 *
 * @module
 */

/** Where Debian (and `.ci/run`) installs Chromium. */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Headless, no sandbox (tests run as root), no GPU, and no background connection of its own:
 * QUIC, first-run tasks, component updates, sync. Add a fresh `--user-data-dir` per launch.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CHROMIUM_FLAGS } from "./chromium.ts";
 * assert.ok(CHROMIUM_FLAGS.includes("--headless"));
 * ```
 */
export const CHROMIUM_FLAGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Whether Chromium is installed (the browser tests are skipped without it). */
export const HAS_CHROMIUM: boolean = await Deno.stat(CHROMIUM).then(() => true, () => false);
