/**
 * The wire contract of the runtime service's API, defined once: every type and list a request
 * or an answer of `/v1/*` is made of. The server (its routes, store records, MCP tools and
 * OpenAPI document), the SDK and the CLI all take them from here, so the two sides of the wire
 * cannot drift apart. Types and `as const` lists only (the zod schemas and OpenAPI enums are
 * derived from the lists on the server), no `Deno.*` and no `node:` import: it runs wherever the
 * SDK runs.
 *
 * | file | concept |
 * |---|---|
 * | `runtime.ts` | the interface version, `GET /v1/runtime`, `GET /healthz` |
 * | `principals.ts` | capabilities, principals, `POST` and `GET /v1/principals` |
 * | `runs.ts` | the public run record, run pages, the start and message bodies |
 * | `run_events.ts` | a run's event log entries and their JSON page |
 * | `tool_requests.ts` | pending tool requests (of a run, and the cross-run inbox), their answer bodies and recorded answers |
 * | `trust_policies.ts` | trust policies, the token exchange's body and refusal reasons |
 * | `activity.ts` | the activity feed: changes across runs |
 * | `notifications.ts` | notification webhooks: subscriptions, deliveries, their payload |
 * | `audit.ts` | audit actions, entries and pages |
 * | `native.ts` | the provider's own bodies the `/provider` interface reads (sessions, events) |
 * | `spend.ts` | money, budgets and per-run limits, spend in a period, `GET /v1/usage` |
 *
 * A run's states, input and usage are the run contract's (`client/contract.ts`), which every
 * provider client implements too; they are re-exported here.
 *
 * Not an entry point of its own: `@automation/runtime/sdk` and `@automation/runtime/server`
 * each export all of it, as the same bindings.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ACTIVE_RUN_STATES, AUDIT_ACTIONS, RUN_STATES, type RunRecord } from "./mod.ts";
 * const run: RunRecord = {
 *   runId: "sesn_1",
 *   principalId: "0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1",
 *   agentId: "agent_1",
 *   environmentId: "env_1",
 *   state: "requires_action",
 *   lastEventSeq: 4,
 *   createdAt: "2026-07-23T00:00:00Z",
 *   updatedAt: "2026-07-23T00:00:05Z",
 * };
 * assert.ok(RUN_STATES.includes(run.state) && ACTIVE_RUN_STATES.has(run.state));
 * assert.ok(AUDIT_ACTIONS.includes("run.started"));
 * ```
 *
 * @module
 */
export {
  ACTIVE_RUN_STATES,
  RUN_STATES,
  type RunStreamEvent,
  type RuntimeRunInput,
  type RuntimeRunState,
  type RuntimeUsage,
} from "../client/contract.ts";
export * from "./runtime.ts";
export * from "./principals.ts";
export * from "./runs.ts";
export * from "./run_events.ts";
export * from "./tool_requests.ts";
export * from "./trust_policies.ts";
export * from "./audit.ts";
export * from "./activity.ts";
export * from "./notifications.ts";
export * from "./native.ts";
export * from "./spend.ts";
