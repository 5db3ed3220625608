/**
 * Records the managed-agents provider returns and the parameters its operations take.
 * Client parameter names are camelCase; the wire is snake_case (see `client.ts`). Records keep
 * unknown fields, since the provider may send more than is listed here.
 *
 * One file because it is one concept: the wire records and parameters of the managed-agents API,
 * which the resource-group files share.
 *
 * @module
 */

/** A JSON object with unknown keys. */
export type JsonObject = Record<string, unknown>;

/** A persisted agent. Every update creates a new immutable version. */
export interface ManagedAgentAgent {
  /** Agent id (`agent_…`). */
  id: string;
  /** Version number, increased by each update. */
  version?: number;
  /** Display name. */
  name?: string;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** An environment sessions run in. */
export interface ManagedAgentEnvironment {
  /** Environment id (`env_…`). */
  id: string;
  /** Display name. */
  name?: string;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** A session: one run of an agent in an environment. */
export interface ManagedAgentSession {
  /** Session id (`sesn_…`). */
  id: string;
  /** Live status (`running`, `idle`, `rescheduling`, `terminated`, …). */
  status?: string;
  /** Model in use, where the provider reports it. */
  model?: string;
  /** Usage counters. */
  usage?: Record<string, unknown>;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** A resource attached to a session (file, repository). */
export interface ManagedAgentResource {
  /** Resource id. */
  id: string;
  /** Resource type. */
  type?: string;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** A multiagent thread of a session. */
export interface ManagedAgentThread {
  /** Thread id (`sthr_…`). */
  id: string;
  /** Thread status. */
  status?: string;
  /** Parent thread id, or null for the primary thread. */
  parent_thread_id?: string | null;
  /** Agent snapshot. */
  agent?: JsonObject;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** A memory store. */
export interface ManagedAgentMemoryStore {
  /** Store id (`memstore_…`). */
  id: string;
  /** Name. */
  name?: string;
  /** Description. */
  description?: string;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** A memory in a store. */
export interface ManagedAgentMemory {
  /** Memory id (`mem_…`). */
  id: string;
  /** Path inside the store. */
  path?: string;
  /** Content (null under the `basic` view). */
  content?: string | null;
  /** SHA-256 of the content, for preconditions. */
  content_sha256?: string;
  /** Current version id. */
  memory_version_id?: string;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** One version of a memory (audit trail). */
export interface ManagedAgentMemoryVersion {
  /** Version id (`memver_…`). */
  id: string;
  /** Memory the version belongs to. */
  memory_id?: string;
  /** Operation that made it. */
  operation?: string;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** A vault of credentials. */
export interface ManagedAgentVault {
  /** Vault id (`vlt_…`). */
  id: string;
  /** Display name. */
  display_name?: string;
  /** Metadata. */
  metadata?: JsonObject;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** A credential in a vault (secrets are write-only and never returned). */
export interface ManagedAgentCredential {
  /** Credential id (`vcrd_…`). */
  id: string;
  /** Display name. */
  display_name?: string;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** A scheduled deployment of an agent. */
export interface ManagedAgentDeployment {
  /** Deployment id (`depl_…`). */
  id: string;
  /** Status (`active`, `paused`, `archived`). */
  status?: string;
  /** Why it is paused, if it is. */
  paused_reason?: unknown;
  /** The parsed schedule, including `upcoming_runs_at`. */
  schedule?: JsonObject;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** One trigger attempt of a deployment. */
export interface ManagedAgentDeploymentRun {
  /** Run id (`drun_…`). */
  id: string;
  /** Deployment it belongs to. */
  deployment_id?: string;
  /** Session it created, or null. */
  session_id?: string | null;
  /** Failure, or null. */
  error?: { type?: string; message?: string } | null;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** Work-queue statistics of a self-hosted environment (the wire record carries no id). */
export interface ManagedAgentWorkQueueStats {
  /** Id of the stats record, if the provider sends one. */
  id?: string;
  /** Record type. */
  type?: string;
  /** Items queued. */
  depth?: number;
  /** Items pending. */
  pending?: number;
  /** Oldest queued item time, or null. */
  oldest_queued_at?: string | null;
  /** Workers polling, or null when unknown. */
  workers_polling?: number | null;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}

/** Parameters of `createAgent`. */
export interface CreateManagedAgentParams {
  /** Agent name. */
  name: string;
  /** Model id. */
  model: string;
  /** System prompt. */
  system?: string;
  /** Description. */
  description?: string;
  /** Tools (wire-shaped objects). */
  tools?: JsonObject[];
  /** MCP servers (wire-shaped objects). */
  mcpServers?: JsonObject[];
  /** Skills (wire-shaped objects). */
  skills?: JsonObject[];
  /** Multiagent configuration, such as `{type: "coordinator", ...}`. */
  multiagent?: JsonObject;
  /** String metadata. */
  metadata?: Record<string, string>;
}

/** Parameters of `updateAgent` (creates a new version). */
export type UpdateManagedAgentParams = Partial<CreateManagedAgentParams> & {
  /** Version the update is based on, when the provider asks for it. */
  version?: number;
};

/** Parameters of `createEnvironment`. */
export interface CreateManagedAgentEnvironmentParams {
  /** Name. */
  name: string;
  /** Configuration (defaults to a cloud, unrestricted environment). */
  config?: JsonObject;
  /** Description. */
  description?: string;
  /** Metadata. */
  metadata?: Record<string, string>;
}

/** Parameters of `updateEnvironment` (applies to new containers only). */
export interface UpdateManagedAgentEnvironmentParams {
  /** Name. */
  name?: string;
  /** Configuration. */
  config?: JsonObject;
  /** Description. */
  description?: string;
  /** Metadata patch (`null` deletes a key). */
  metadata?: Record<string, string | null>;
}

/** Parameters of `createSession`. */
export interface CreateManagedAgentSessionParams {
  /** Agent to run. */
  agentId: string;
  /** Pinned agent version; omitted means the latest at creation. */
  agentVersion?: number;
  /** Session-local overrides with wire-shaped keys (`model`, `system`, `tools`, `mcp_servers`, `skills`); `null` clears. */
  agentOverrides?: JsonObject;
  /** Environment to run in. */
  environmentId: string;
  /** Title. */
  title?: string;
  /** Resources to mount. */
  resources?: JsonObject[];
  /** Vaults the session may use. */
  vaultIds?: string[];
  /** Metadata. */
  metadata?: Record<string, string>;
  /** A spending limit, wire-shaped (`{type: "limit", max_list_cost: {amount, currency}}`). */
  budget?: JsonObject;
  /**
   * Events the session starts with, wire-shaped (`user.message`, `user.define_outcome`; at most
   * 50): the provider records them with the session, which starts its first turn at once.
   */
  initialEvents?: JsonObject[];
}

/**
 * A session's spend ceiling, wire-shaped: `max_list_cost` is an amount of minor units (cents for
 * `USD`) as an integer string.
 */
export interface ManagedAgentSessionBudget {
  /** The only kind: a hard limit. */
  type: "limit";
  /** The most the session may spend at list prices. */
  max_list_cost: { amount: string; currency: string };
}

/** Parameters of `updateSession` (session must be idle). */
export interface UpdateManagedAgentSessionParams {
  /** Title. */
  title?: string;
  /** Metadata patch. */
  metadata?: Record<string, string | null>;
  /** Full replacements of the session's tools and MCP servers. */
  agent?: { tools?: JsonObject[]; mcp_servers?: JsonObject[] };
  /** Full replacement of the vault ids. */
  vaultIds?: string[];
  /**
   * A new spend ceiling for a session created with one (raised or lowered, above what it spent),
   * or null to remove it; any status but terminated.
   */
  budget?: ManagedAgentSessionBudget | null;
}

/** Free-form update of a session resource (for example a rotated `authorization_token`). */
export type UpdateSessionResourceParams = JsonObject;

/** Parameters of `confirmTool`. */
export interface ConfirmToolParams {
  /** Id of the `agent.tool_use` event. */
  toolUseId: string;
  /** The decision. */
  result: "allow" | "deny";
  /** Message shown to the agent on deny. */
  denyMessage?: string;
  /** Thread the tool call ran on (not sent on the wire: the provider routes by tool-use id). */
  sessionThreadId?: string;
}

/** Parameters of `respondCustomTool`. */
export interface RespondCustomToolParams {
  /** Id of the `agent.custom_tool_use` event. */
  toolUseId: string;
  /** Result content blocks. */
  content: JsonObject[];
  /** Whether the result is an error. */
  isError?: boolean;
  /** Thread the tool call ran on (not sent on the wire). */
  sessionThreadId?: string;
}

/** What a custom tool handler returns. */
export interface CustomToolResponse {
  /** Result content blocks. */
  content: JsonObject[];
  /** Whether the result is an error. */
  isError?: boolean;
}

/** What a tool confirmation handler returns. */
export interface ToolConfirmationDecision {
  /** The decision. */
  result: "allow" | "deny";
  /** Message shown to the agent on deny. */
  denyMessage?: string;
}

/** A rubric an outcome is graded against. */
export type ManagedAgentRubric =
  | { type: "text"; content: string }
  | { type: "file"; file_id: string };

/** Parameters of `defineOutcome`. */
export interface DefineOutcomeParams {
  /** What done looks like. */
  description: string;
  /** How it is graded. */
  rubric: ManagedAgentRubric;
  /** Grade-and-revise iterations (default 3, at most 20). */
  maxIterations?: number;
}

/** Parameters of `createMemoryStore`. */
export interface CreateMemoryStoreParams {
  /** Name. */
  name: string;
  /** Description. */
  description?: string;
  /** Metadata. */
  metadata?: Record<string, string>;
}

/** Parameters of `createMemory`. */
export interface CreateMemoryParams {
  /** Path in the store (409 `memory_path_conflict_error` when occupied). */
  path: string;
  /** Content. */
  content: string;
}

/** Parameters of `updateMemory`. */
export interface UpdateMemoryParams {
  /** New content. */
  content?: string;
  /** New path. */
  path?: string;
  /** Only update when the content still has this digest. */
  precondition?: { type: "content_sha256"; content_sha256: string };
}

/** Parameters of `listMemories`. */
export interface ListMemoriesParams {
  /** Only paths under this prefix. */
  pathPrefix?: string;
  /** Depth below the prefix. */
  depth?: number;
  /** `basic` (no content) or `full`. */
  view?: "basic" | "full";
}

/** Parameters of `createVault`. */
export interface CreateVaultParams {
  /** Display name. */
  displayName: string;
  /** Metadata. */
  metadata?: Record<string, string>;
}

/** Parameters of `updateVault`. */
export interface UpdateVaultParams {
  /** Display name. */
  displayName?: string;
  /** Metadata patch. */
  metadata?: Record<string, string | null>;
}

/** How a token endpoint authenticates the client. */
export type ManagedAgentTokenEndpointAuth =
  | { type: "none" }
  | { type: "client_secret_basic"; client_secret: string }
  | { type: "client_secret_post"; client_secret: string };

/** The secret payload of a credential (write-only). */
export type ManagedAgentCredentialAuth =
  | {
    type: "mcp_oauth";
    mcp_server_url: string;
    access_token: string;
    expires_at?: string;
    refresh?: {
      token_endpoint: string;
      client_id: string;
      scope?: string;
      refresh_token: string;
      token_endpoint_auth: ManagedAgentTokenEndpointAuth;
    };
  }
  | { type: "static_bearer"; mcp_server_url: string; token: string };

/** Parameters of `createCredential` (one active credential per `mcp_server_url`). */
export interface CreateCredentialParams {
  /** Display name. */
  displayName?: string;
  /** Secret payload. */
  auth: ManagedAgentCredentialAuth;
}

/** Parameters of `updateCredential` (`mcp_server_url`, `token_endpoint`, `client_id` are locked). */
export interface UpdateCredentialParams {
  /** Display name. */
  displayName?: string;
  /** Secret payload fields to replace. */
  auth?: JsonObject;
}

/** A cron schedule (IANA time zone, at most minute granularity). */
export interface ManagedAgentSchedule {
  /** Schedule type. */
  type: "cron";
  /** Cron expression. */
  expression: string;
  /** IANA time zone name. */
  timezone: string;
}

/** A session event as sent or received on the wire. */
export type ManagedAgentEvent = JsonObject;

/** Parameters of `createDeployment`. */
export interface CreateManagedAgentDeploymentParams {
  /** Name. */
  name: string;
  /** Agent to run. */
  agentId: string;
  /** Pinned version; omitted means the latest at each firing. */
  agentVersion?: number;
  /** Environment to run in. */
  environmentId: string;
  /** Events each run starts with (must include the starting `user.message`). */
  initialEvents: ManagedAgentEvent[];
  /** When it fires. */
  schedule: ManagedAgentSchedule;
  /** Resources to mount. */
  resources?: JsonObject[];
  /** Vaults the sessions may use. */
  vaultIds?: string[];
  /** Metadata. */
  metadata?: Record<string, string>;
}

/** Parameters of `listDeploymentRuns`. */
export interface ListDeploymentRunsParams {
  /** Only failed runs (`has_error=true`). */
  hasError?: boolean;
}

/**
 * Per-call options: every operation takes an `AbortSignal`, extra beta values and extra headers.
 */
export interface ManagedAgentRequestOptions {
  /** Cancels the request (and a stream's body). */
  signal?: AbortSignal;
  /**
   * Beta values for this call, sent first in `provider-beta` (then the client's, then
   * `managed-agents-2026-04-01`, which is always sent).
   */
  betas?: readonly string[];
  /**
   * Extra headers for this call. Headers the client sets itself (`authorization`, `x-api-key`,
   * `provider-version`, `provider-beta`, `content-type`, `accept`) are a `TypeError`.
   */
  headers?: Record<string, string>;
  /**
   * The `provider-version` of this call instead of the client's (a token such as
   * `2026-10-21`): a gateway passing on its caller's version.
   */
  providerVersion?: string;
}

/** A `created_at` range filter, sent as `created_at[gte]=…` and so on. */
export interface ManagedAgentCreatedAtRange {
  /** After this time (exclusive). */
  gt?: string;
  /** At or after this time. */
  gte?: string;
  /** Before this time (exclusive). */
  lt?: string;
  /** At or before this time. */
  lte?: string;
}

/**
 * The provider's page parameters. A list walks every page from `page` on; `limit` is the page
 * size (how many records each request asks for), not a cap on the result.
 */
export interface ManagedAgentListOptions extends ManagedAgentRequestOptions {
  /** Records per page (provider default when omitted). */
  limit?: number;
  /** Cursor of the page to start from (a `next_page` value). */
  page?: string;
}

/** Parameters of `listAgents`. */
export interface ListManagedAgentsParams extends ManagedAgentListOptions {
  /** Include archived agents. */
  includeArchived?: boolean;
  /** Creation time filter. */
  createdAt?: Pick<ManagedAgentCreatedAtRange, "gte" | "lte">;
}

/** Parameters of `getAgent`. */
export interface GetManagedAgentOptions extends ManagedAgentRequestOptions {
  /** A specific version (latest when omitted). */
  version?: number;
}

/** Parameters of `listEnvironments`. */
export interface ListManagedAgentEnvironmentsParams extends ManagedAgentListOptions {
  /** Include archived environments. */
  includeArchived?: boolean;
}

/** Parameters of `listSessions`. */
export interface ListManagedAgentSessionsParams extends ManagedAgentListOptions {
  /** Only sessions of this agent. */
  agentId?: string;
  /** Only sessions pinned to this agent version. */
  agentVersion?: number;
  /** Only sessions created by this deployment. */
  deploymentId?: string;
  /** Only sessions using this memory store. */
  memoryStoreId?: string;
  /** Only sessions in these statuses. */
  statuses?: string[];
  /** Include archived sessions. */
  includeArchived?: boolean;
  /** Sort by creation time (`desc` by default). */
  order?: "asc" | "desc";
  /** Creation time filter. */
  createdAt?: ManagedAgentCreatedAtRange;
}

/** Parameters of `listEvents`. */
export interface ListSessionEventsParams extends ManagedAgentListOptions {
  /** Sort by processing time (`asc` by default). */
  order?: "asc" | "desc";
  /** Only these event types. */
  types?: string[];
  /** Processing time filter. */
  createdAt?: ManagedAgentCreatedAtRange;
}

/** Parameters of `listThreads`. */
export interface ListManagedAgentThreadsParams extends ManagedAgentListOptions {
  /** Only threads in these statuses. */
  statuses?: string[];
}

/** Parameters of `listMemoryStores`. */
export interface ListMemoryStoresParams extends ManagedAgentListOptions {
  /** Include archived stores. */
  includeArchived?: boolean;
  /** Creation time filter. */
  createdAt?: Pick<ManagedAgentCreatedAtRange, "gte" | "lte">;
}

/** Parameters of `updateMemoryStore`. */
export interface UpdateMemoryStoreParams {
  /** Name. */
  name?: string;
  /** Description. */
  description?: string;
  /** Metadata patch (`null` deletes a key). */
  metadata?: Record<string, string | null>;
}

/** Parameters of `listDeployments`. */
export interface ListManagedAgentDeploymentsParams extends ManagedAgentListOptions {
  /** Only deployments of this agent. */
  agentId?: string;
  /** `active` or `paused`. */
  status?: "active" | "paused";
  /** Include archived deployments. */
  includeArchived?: boolean;
  /** Creation time filter. */
  createdAt?: Pick<ManagedAgentCreatedAtRange, "gte" | "lte">;
}

/** Options of `interruptSession`. */
export interface InterruptSessionOptions extends ManagedAgentRequestOptions {
  /** Interrupt only this thread (all non-archived threads when omitted). */
  sessionThreadId?: string;
}

/** Options of `stopWork`. */
export interface StopWorkOptions extends ManagedAgentRequestOptions {
  /** Stop at once instead of gracefully. */
  force?: boolean;
}

/** The answer of `validateMcpOauthCredential`. */
export interface ManagedAgentCredentialValidation {
  /** `valid`, `invalid` or `unknown`. */
  status: string;
  /** Further fields the provider sends. */
  [key: string]: unknown;
}
