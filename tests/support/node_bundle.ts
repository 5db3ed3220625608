/**
 * What the Node tests share: bundle one of our entry points the way a browser or Node user would
 * get it (`deno bundle`, browser platform, ESM), check that it uses no Deno API, and find Node.
 *
 * @module
 */
import assert from "node:assert/strict";
import { REPO_ROOT } from "./cli.ts";

/**
 * Bundles `entry` (relative to the repository, such as `sdk/mod.ts`) into `out`; asserts that
 * bundling succeeded and that the bundle calls no Deno API.
 */
export async function bundleForNode(entry: string, out: string): Promise<void> {
  const bundle = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--platform=browser", "--format=esm", "--frozen-lockfile", "-o", out, entry],
    cwd: REPO_ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(bundle.success, new TextDecoder().decode(bundle.stderr));
  assert.equal(/\bDeno\./.test(await Deno.readTextFile(out)), false, "no Deno API in the bundle");
}

/** The major version of the `node` on the PATH, or null when there is none. */
export async function nodeMajor(): Promise<number | null> {
  try {
    const { stdout, success } = await new Deno.Command("node", { args: ["--version"] }).output();
    if (!success) return null;
    return Number(/^v(\d+)/.exec(new TextDecoder().decode(stdout))?.[1] ?? NaN);
  } catch {
    return null;
  }
}
