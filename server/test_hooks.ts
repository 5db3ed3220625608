/**
 * Test hooks of the runtime server: seams that tests and benchmarks reach and no operator sets.
 * They are not in `RuntimeServerOptions`, and this module is not exported by the package, so a
 * user of `@automation/runtime/server` neither sees nor can set them.
 *
 * The hooks ride on the server options under a symbol only this module holds
 * ({@linkcode withTestHooks}), so they pass through `serveRuntime` to `createRuntimeServer`
 * unchanged; the server reads them with {@linkcode testHooksOf}. `serve` takes its one hook from
 * its environment ({@linkcode testHooksFromEnv}), for the process tests; no request can turn a
 * hook on.
 *
 * @module
 */
import type { ProviderManagedAgentClient } from "../client/mod.ts";
import type { ResolveHost } from "./notifications/targets.ts";

/** The test hooks of a runtime server; each is off when absent. */
export interface RuntimeTestHooks {
  /** Awaited between the claim of a tool answer and its send. */
  readonly afterClaim?: () => Promise<void>;
  /** Replaces the 30 s after which a claim counts as left by a dead replica, in ms. */
  readonly claimStaleMs?: number;
  /** The provider client to use instead of one built from the provider settings. */
  readonly providerClient?: ProviderManagedAgentClient;
  /**
   * Notification seams: the DNS lookup of targets, the delays between delivery attempts (ms),
   * the time between the dispatcher's and the sender's passes (ms), and root certificates
   * trusted for `https` targets besides Deno's.
   */
  readonly notifications?: {
    readonly resolve?: ResolveHost;
    readonly retryDelaysMs?: readonly number[];
    readonly pollMs?: number;
    readonly caCerts?: readonly string[];
  };
}

const TEST_HOOKS: unique symbol = Symbol("automation-runtime test hooks");

/**
 * A copy of `options` that carries `hooks` to the server built from it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { testHooksOf, withTestHooks } from "./test_hooks.ts";
 * const options = withTestHooks({ maxActiveRuns: 2 }, { claimStaleMs: 200 });
 * assert.equal(options.maxActiveRuns, 2);
 * assert.equal(testHooksOf({ ...options })?.claimStaleMs, 200);
 * ```
 */
export function withTestHooks<T extends object>(options: T, hooks: RuntimeTestHooks): T {
  return { ...options, [TEST_HOOKS]: hooks };
}

/**
 * The test hooks `options` carry, if any.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { testHooksOf } from "./test_hooks.ts";
 * assert.equal(testHooksOf({ maxActiveRuns: 2 }), undefined);
 * ```
 */
export function testHooksOf(options: object): RuntimeTestHooks | undefined {
  return (options as { [TEST_HOOKS]?: RuntimeTestHooks })[TEST_HOOKS];
}

/**
 * For the process tests of tool answers only: `serve` pauses this many ms between claiming a tool
 * answer and sending it (absent: no pause).
 */
export const ANSWER_PAUSE_TEST_VARIABLE = "AUTOMATION_RUNTIME_TEST_PAUSE_AFTER_CLAIM_MS";

/**
 * The hooks `serve` takes from its environment: the pause after a claim when
 * {@linkcode ANSWER_PAUSE_TEST_VARIABLE} holds a whole number, logged each time it pauses.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { testHooksFromEnv } from "./test_hooks.ts";
 * const logger = { info() {} };
 * assert.equal(testHooksFromEnv({}, logger), undefined);
 * const hooks = testHooksFromEnv({ AUTOMATION_RUNTIME_TEST_PAUSE_AFTER_CLAIM_MS: "1" }, logger);
 * await hooks?.afterClaim?.();
 * ```
 */
export function testHooksFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  logger: { info(message: string, fields?: Record<string, unknown>): void },
): RuntimeTestHooks | undefined {
  const text = env[ANSWER_PAUSE_TEST_VARIABLE];
  if (text === undefined || !/^[0-9]{1,7}$/.test(text)) return undefined;
  const ms = Number(text);
  return {
    afterClaim: () => {
      logger.info("test hook: pausing after a tool-answer claim", { ms });
      return new Promise((resolve) => setTimeout(resolve, ms));
    },
  };
}
