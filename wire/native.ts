/**
 * The bodies of the provider's own API that the service's `/provider` interface reads itself,
 * in the provider's shape (snake_case, as the vendor's SDK sends them): the session it starts
 * (`POST /provider/v1/sessions`) and the events a client sends to one
 * (`POST /provider/v1/sessions/{id}/events`). Everything else it passes on as it came.
 *
 * @module
 */

/** A provider object as the provider writes it. */
export type ProviderWireObject = Record<string, unknown>;

/** The overridable parts of an agent, in the provider's shape. */
export const AGENT_OVERRIDE_FIELDS = ["model", "system", "tools", "mcp_servers", "skills"] as const;

/** One overridable part of an agent: one of {@linkcode AGENT_OVERRIDE_FIELDS}. */
export type AgentOverrideField = typeof AGENT_OVERRIDE_FIELDS[number];

/**
 * An agent reference: `agent` (its id and version), or `agent_with_overrides` (and the parts it
 * overrides, {@linkcode AGENT_OVERRIDE_FIELDS}, only there).
 */
export interface NativeAgentObject {
  /** `agent`, or `agent_with_overrides`. */
  type: "agent" | "agent_with_overrides";
  /** The agent's id. */
  id: string;
  /** A pinned version (latest when absent). */
  version?: number;
  /** The model to use instead. */
  model?: unknown;
  /** The system prompt to use instead. */
  system?: unknown;
  /** The tools to use instead. */
  tools?: unknown;
  /** The MCP servers to use instead. */
  mcp_servers?: unknown;
  /** The skills to use instead. */
  skills?: unknown;
}

/** The agent a session runs: its id (the latest version), or a reference. */
export type NativeAgentReference = string | NativeAgentObject;

/** The resource kinds a session may start with. */
export const NATIVE_RESOURCE_TYPES = ["github_repository", "file", "memory_store"] as const;

/** The body of `POST /provider/v1/sessions`. */
export interface NativeCreateSessionBody {
  /** The agent. */
  agent: NativeAgentReference;
  /** The environment. */
  environment_id: string;
  /** A title. */
  title?: string | null;
  /** String pairs. */
  metadata?: Record<string, string>;
  /** Resources to mount (`type` one of {@linkcode NATIVE_RESOURCE_TYPES}). */
  resources?: ({ type: typeof NATIVE_RESOURCE_TYPES[number] } & ProviderWireObject)[];
  /** Vaults the session may use. */
  vault_ids?: string[];
  /** A spending limit. */
  budget?: ProviderWireObject | null;
  /** Events the session starts with: `user.message`, `user.define_outcome`; at most 50. */
  initial_events?: ({ type: "user.message" | "user.define_outcome" } & ProviderWireObject)[];
}

/**
 * The events a client may send to a session through the gateway, with the capability each
 * needs: follow-ups and interrupts `session:write` (the caller's own sessions), tool
 * confirmations `session:approve`, tool results `session:write` (own sessions).
 */
export const NATIVE_SENDABLE_EVENTS = [
  "user.message",
  "user.define_outcome",
  "user.interrupt",
  "user.tool_confirmation",
  "user.custom_tool_result",
  "user.tool_result",
] as const;

/** An event type a client may send: one of {@linkcode NATIVE_SENDABLE_EVENTS}. */
export type NativeSendableEvent = typeof NATIVE_SENDABLE_EVENTS[number];

/** The body of `POST /provider/v1/sessions/{id}/events`. */
export interface NativeSendEventsBody {
  /** The events, sent in order. */
  events: ({ type: NativeSendableEvent } & ProviderWireObject)[];
}
