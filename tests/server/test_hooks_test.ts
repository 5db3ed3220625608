/**
 * The test hooks' seam (`server/test_hooks.ts`): hooks ride on a copy of the server options
 * under a symbol, so they pass through a spread (as `serveRuntime` passes its options on) and
 * never show as a key of the options or in their JSON.
 */
import assert from "node:assert/strict";
import { testHooksOf, withTestHooks } from "../../server/test_hooks.ts";

Deno.test("test hooks ride on a copy of the options and survive a spread, never a key", () => {
  const options = { maxActiveRuns: 2 };
  const hooked = withTestHooks(options, { claimStaleMs: 200 });
  assert.equal(testHooksOf(options), undefined);
  assert.equal(testHooksOf({ ...hooked, port: 0 })?.claimStaleMs, 200);
  assert.deepEqual(Object.keys(hooked), ["maxActiveRuns"]);
  assert.equal(JSON.stringify(hooked), '{"maxActiveRuns":2}');
});
