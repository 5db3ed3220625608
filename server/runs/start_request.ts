/**
 * The normalized start request: what a run starts with, whichever interface asked for it. Both
 * `POST /v1/runs` ({@linkcode startRequestOfBody}) and the provider's own
 * `POST /provider/v1/sessions` (`server/native/`) map their bodies into one
 * {@linkcode StartRequest}, and the run gateway's one start path (`_start_run.ts`) checks and
 * starts it: the capability, the principal's agents, agent overrides and active runs, and every
 * other start check, apply to both the same way.
 *
 * @module
 */
import type { ManagedAgentEvent } from "../../client/mod.ts";
import type { StartRunBody } from "../../wire/mod.ts";

/** A wire-shaped object of the provider's API. */
export type ProviderObject = Record<string, unknown>;

/** What a run starts with (see the module doc). */
export interface StartRequest {
  /** The agent (absent: the service's default agent). */
  agentId?: string;
  /** A pinned agent version. */
  agentVersion?: number;
  /**
   * Session-local overrides of the agent, wire-shaped (`model`, `system`, `tools`,
   * `mcp_servers`, `skills`): refused unless the principal's policy allows agent overrides.
   */
  agentOverrides?: ProviderObject;
  /** The environment (absent: the service's default environment). */
  environmentId?: string;
  /** A title. */
  title?: string;
  /** The session's metadata (string pairs). */
  metadata?: Record<string, string>;
  /** Resources to mount, wire-shaped (`github_repository`, `file`, `memory_store`). */
  resources?: ProviderObject[];
  /** Vaults the session may use. */
  vaultIds?: string[];
  /** A spending limit, wire-shaped. */
  budget?: ProviderObject;
  /** Events recorded with the session itself (`user.message`, `user.define_outcome`). */
  initialEvents?: ProviderObject[];
  /** User messages sent once the session exists: the run's kickoff (`/v1`). */
  kickoff?: ManagedAgentEvent[];
}

/** The event types that start a turn when a session begins with them. */
const TURN_STARTERS: ReadonlySet<unknown> = new Set(["user.message", "user.define_outcome"]);

/**
 * Whether an event of this type starts a turn (`user.message`, `user.define_outcome`): what the
 * run's turns count, on the gateway's side (a follow-up) and the tail's (the session's history).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startsATurn } from "./start_request.ts";
 * assert.equal(startsATurn("user.define_outcome"), true);
 * assert.equal(startsATurn("user.interrupt"), false);
 * ```
 */
export function startsATurn(type: unknown): boolean {
  return TURN_STARTERS.has(type);
}

/**
 * Whether a start request begins a turn: a kickoff, or an initial event that starts one. A
 * session started without one waits idle and holds no active-run slot.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startsTurn } from "./start_request.ts";
 * assert.equal(startsTurn({ agentId: "a" }), false);
 * assert.equal(startsTurn({ initialEvents: [{ type: "user.message", content: [] }] }), true);
 * ```
 */
export function startsTurn(request: StartRequest): boolean {
  return (request.kickoff?.length ?? 0) > 0 ||
    (request.initialEvents ?? []).some((event) => TURN_STARTERS.has(event.type));
}

/**
 * The user messages of a `/v1` input: a prompt, or a conversation of user turns.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { userMessages } from "./start_request.ts";
 * assert.deepEqual(userMessages("hi"), [
 *   { type: "user.message", content: [{ type: "text", text: "hi" }] },
 * ]);
 * ```
 */
export function userMessages(input: StartRunBody["input"]): ManagedAgentEvent[] {
  if (typeof input === "string") {
    return [{ type: "user.message", content: [{ type: "text", text: input }] }];
  }
  return input.map((item) => ({
    type: "user.message",
    content: typeof item.content === "string"
      ? [{ type: "text", text: item.content }]
      : item.content,
  }));
}

/**
 * The start request of a `POST /v1/runs` body: its `metadata` names the agent, version,
 * environment, resources and vaults; its `input` is the kickoff.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startRequestOfBody } from "./start_request.ts";
 * const request = startRequestOfBody({
 *   input: "triage",
 *   title: "t",
 *   metadata: { agent_id: "agent_1", vault_ids: ["vlt_1"] },
 * });
 * assert.equal(request.agentId, "agent_1");
 * assert.deepEqual(request.vaultIds, ["vlt_1"]);
 * assert.equal(request.kickoff?.length, 1);
 * ```
 */
export function startRequestOfBody(body: StartRunBody): StartRequest {
  const metadata = body.metadata ?? {};
  return {
    ...(metadata.agent_id !== undefined ? { agentId: metadata.agent_id } : {}),
    ...(metadata.agent_version !== undefined ? { agentVersion: metadata.agent_version } : {}),
    ...(metadata.environment_id !== undefined ? { environmentId: metadata.environment_id } : {}),
    ...(body.title !== undefined ? { title: body.title } : {}),
    ...(metadata.resources !== undefined ? { resources: metadata.resources } : {}),
    ...(metadata.vault_ids !== undefined ? { vaultIds: metadata.vault_ids } : {}),
    kickoff: userMessages(body.input),
  };
}
