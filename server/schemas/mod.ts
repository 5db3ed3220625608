/**
 * The request body schemas of the HTTP routes (zod 4), exported by name: the routes validate
 * with them and the MCP tools publish them as JSON Schema, so both interfaces share one
 * definition. Importing this module loads zod; the routes load it lazily (see `lazy.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createPrincipalBody, startRunBody } from "./mod.ts";
 * assert.equal(startRunBody.safeParse({ input: "Summarize" }).success, true);
 * assert.equal(createPrincipalBody.safeParse({}).success, false);
 * ```
 *
 * @module
 */
export { capability, createPrincipalBody, grantedCapabilities } from "./principals.ts";
export {
  createTrustPolicyBody,
  MAX_AUDIENCE_LENGTH,
  tokenExchangeBody,
  trustPolicyName,
} from "./trust_policies.ts";
export {
  customToolResultBody,
  MAX_ID_LENGTH,
  MAX_INPUT_ITEMS,
  MAX_TITLE_LENGTH,
  printableId,
  runInput,
  runInputItem,
  runMetadata,
  sendMessageBody,
  startRunBody,
  toolConfirmationBody,
} from "./runs.ts";
export { createWebhookSubscriptionBody, MAX_SUBSCRIPTION_DESCRIPTION } from "./notifications.ts";
export { isLazyBodySchema, type LazyBodySchema, lazyBodySchema } from "./lazy.ts";
