/**
 * Every operation of the provider's own API that the `/provider` interface serves, in one table:
 * its method and path (the provider's; the interface's is `/provider` followed by it), what it
 * does, and how the gateway treats it ({@linkcode NativeAccess}), with the rules each kind of
 * access runs ({@linkcode NATIVE_RULES}). The interface's routes and their entries in the OpenAPI
 * document are both made from this table; an operation not in it answers 404 `not_found_error`.
 *
 * This module is what the server loads at start (with `lazy.ts`); the handlers load with the
 * first request under `/provider`.
 *
 * @module
 */
import { type LazyBodySchema, lazyBodySchema } from "../schemas/lazy.ts";
import type { NativeRouteRules } from "./_chain.ts";

/**
 * How the gateway treats an operation:
 *
 * - a session operation (`createSession` … `streamEvents`): handled by the gateway itself, on
 *   the caller's own sessions (approvers and admins: every session's, for reading);
 * - `thread`, `threadStream`: threads of a session the caller may read, passed on;
 * - `agentRead`, `environmentRead`: for `session:read`, limited to the caller's agents and
 *   environments (others are not found), passed on;
 * - `admin`: `authority:admin` only, passed on as it is.
 */
export type NativeAccess =
  | "createSession"
  | "listSessions"
  | "getSession"
  | "updateSession"
  | "archiveSession"
  | "deleteSession"
  | "listEvents"
  | "sendEvents"
  | "streamEvents"
  | "thread"
  | "threadStream"
  | "agentRead"
  | "environmentRead"
  | "admin";

/** One operation of the table. */
export interface NativeOperation {
  /** The method. */
  readonly method: "GET" | "POST" | "DELETE";
  /** The provider's path, with `:name` parameters. */
  readonly path: string;
  /** What it does. */
  readonly summary: string;
  /** How the gateway treats it. */
  readonly access: NativeAccess;
}

/** The prefix of the interface: a client's base URL is `{base_url}/provider`. */
export const NATIVE_PREFIX = "/provider";

/**
 * Whether a path lies under the interface: its refusals, also the router's own 404 and 405, are
 * in the provider's error shape.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isNativePath } from "./operations.ts";
 * assert.equal(isNativePath("/provider/v1/sessions"), true);
 * assert.equal(isNativePath("/providers"), false);
 * ```
 */
export function isNativePath(path: string): boolean {
  return path === NATIVE_PREFIX || path.startsWith(`${NATIVE_PREFIX}/`);
}

/** The create body's schema (`nativeCreateSessionBody`), loaded with the first body. */
export const createSessionSchema: LazyBodySchema = lazyBodySchema(async () =>
  (await import("../schemas/native.ts")).nativeCreateSessionBody
);

/** The send body's schema (`nativeSendEventsBody`), loaded with the first body. */
export const sendEventsSchema: LazyBodySchema = lazyBodySchema(async () =>
  (await import("../schemas/native.ts")).nativeSendEventsBody
);

/** A body that must be a JSON object, checked without loading zod. */
const JSON_OBJECT: NonNullable<NativeRouteRules["schema"]> = {
  safeParse(value: unknown) {
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      return { success: true, data: value };
    }
    return {
      success: false,
      error: { issues: [{ path: [], message: "The body must be a JSON object" }] },
    };
  },
};

/** The rules of each access: capability, body, schema, idempotency (see `_chain.ts`). */
export const NATIVE_RULES: Readonly<Record<NativeAccess, NativeRouteRules>> = {
  createSession: {
    capability: "session:write",
    body: true,
    schema: createSessionSchema,
    idempotent: true,
  },
  listSessions: { capability: "session:read" },
  getSession: { capability: "session:read" },
  updateSession: { capability: "session:write", body: true, schema: JSON_OBJECT, idempotent: true },
  archiveSession: { capability: "session:write", idempotent: true },
  deleteSession: { capability: "session:write" },
  listEvents: { capability: "session:read" },
  sendEvents: { body: true, schema: sendEventsSchema, idempotent: true },
  streamEvents: { capability: "session:read" },
  thread: { capability: "session:read" },
  threadStream: { capability: "session:read" },
  agentRead: { capability: "session:read" },
  environmentRead: { capability: "session:read" },
  admin: { capability: "authority:admin", body: true, idempotent: true },
};

function op(
  method: NativeOperation["method"],
  path: string,
  access: NativeAccess,
  summary: string,
): NativeOperation {
  return Object.freeze({ method, path, access, summary });
}

const S = "/v1/sessions/:sessionId";
const T = `${S}/threads/:threadId`;
const E = "/v1/environments/:environmentId";
const V = "/v1/vaults/:vaultId";
const C = `${V}/credentials/:credentialId`;
const M = "/v1/memory_stores/:memoryStoreId";
const D = "/v1/deployments/:deploymentId";
const B = "/v1/messages/batches/:batchId";

/**
 * Every operation, more specific paths first (a literal segment before a parameter in the same
 * place).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NATIVE_OPERATIONS } from "./operations.ts";
 * const create = NATIVE_OPERATIONS.find((o) => o.method === "POST" && o.path === "/v1/sessions");
 * assert.equal(create?.access, "createSession");
 * ```
 */
export const NATIVE_OPERATIONS: readonly NativeOperation[] = Object.freeze([
  // Sessions: runs of the gateway.
  op("POST", "/v1/sessions", "createSession", "Create a session: a run of the caller"),
  op("GET", "/v1/sessions", "listSessions", "List the caller's sessions, newest first"),
  op("GET", S, "getSession", "Retrieve a session"),
  op("POST", S, "updateSession", "Update a session (title and metadata; more for admins)"),
  op("DELETE", S, "deleteSession", "Delete a session"),
  op("POST", `${S}/archive`, "archiveSession", "Archive a session"),
  op("GET", `${S}/events/stream`, "streamEvents", "Stream a session's events (resumable)"),
  op("GET", `${S}/events`, "listEvents", "List a session's events"),
  op("POST", `${S}/events`, "sendEvents", "Send events: follow-ups, interrupts, tool answers"),
  // Threads of a session the caller may read.
  op("GET", `${S}/threads`, "thread", "List a session's threads"),
  op("GET", `${T}/stream`, "threadStream", "Stream a thread's events"),
  op("GET", `${T}/events`, "thread", "List a thread's events"),
  op("GET", T, "thread", "Retrieve a thread"),
  op("POST", `${T}/archive`, "admin", "Archive a thread"),
  // Session resources.
  op("GET", `${S}/resources`, "admin", "List a session's resources"),
  op("POST", `${S}/resources`, "admin", "Add a resource to a session"),
  op("GET", `${S}/resources/:resourceId`, "admin", "Retrieve a session resource"),
  op("POST", `${S}/resources/:resourceId`, "admin", "Update a session resource"),
  op("DELETE", `${S}/resources/:resourceId`, "admin", "Remove a session resource"),
  // Agents.
  op("GET", "/v1/agents", "agentRead", "List the agents the caller may use"),
  op("POST", "/v1/agents", "admin", "Create an agent"),
  op("GET", "/v1/agents/:agentId/versions", "agentRead", "List an agent's versions"),
  op("POST", "/v1/agents/:agentId/archive", "admin", "Archive an agent"),
  op("GET", "/v1/agents/:agentId", "agentRead", "Retrieve an agent"),
  op("POST", "/v1/agents/:agentId", "admin", "Update an agent"),
  // Environments and their work queue.
  op("GET", "/v1/environments", "environmentRead", "List the environments the caller may use"),
  op("POST", "/v1/environments", "admin", "Create an environment"),
  op("POST", `${E}/archive`, "admin", "Archive an environment"),
  op("GET", `${E}/work/poll`, "admin", "Poll an environment's work queue"),
  op("GET", `${E}/work/stats`, "admin", "An environment's work queue statistics"),
  op("GET", `${E}/work`, "admin", "List an environment's work"),
  op("POST", `${E}/work/:workId/ack`, "admin", "Acknowledge work"),
  op("POST", `${E}/work/:workId/heartbeat`, "admin", "Heartbeat work"),
  op("POST", `${E}/work/:workId/stop`, "admin", "Stop work"),
  op("GET", `${E}/work/:workId`, "admin", "Retrieve work"),
  op("POST", `${E}/work/:workId`, "admin", "Update work"),
  op("GET", E, "environmentRead", "Retrieve an environment"),
  op("POST", E, "admin", "Update an environment"),
  op("DELETE", E, "admin", "Delete an environment"),
  // Vaults and credentials.
  op("GET", "/v1/vaults", "admin", "List vaults"),
  op("POST", "/v1/vaults", "admin", "Create a vault"),
  op("POST", `${V}/archive`, "admin", "Archive a vault"),
  op("GET", `${V}/credentials`, "admin", "List a vault's credentials"),
  op("POST", `${V}/credentials`, "admin", "Create a credential"),
  op("POST", `${C}/archive`, "admin", "Archive a credential"),
  op("POST", `${C}/mcp_oauth_validate`, "admin", "Validate an MCP OAuth credential"),
  op("GET", C, "admin", "Retrieve a credential"),
  op("POST", C, "admin", "Update a credential"),
  op("DELETE", C, "admin", "Delete a credential"),
  op("GET", V, "admin", "Retrieve a vault"),
  op("POST", V, "admin", "Update a vault"),
  op("DELETE", V, "admin", "Delete a vault"),
  // Memory stores, memories and their versions.
  op("GET", "/v1/memory_stores", "admin", "List memory stores"),
  op("POST", "/v1/memory_stores", "admin", "Create a memory store"),
  op("POST", `${M}/archive`, "admin", "Archive a memory store"),
  op("GET", `${M}/memories`, "admin", "List memories"),
  op("POST", `${M}/memories`, "admin", "Create a memory"),
  op("GET", `${M}/memories/:memoryId`, "admin", "Retrieve a memory"),
  op("POST", `${M}/memories/:memoryId`, "admin", "Update a memory"),
  op("DELETE", `${M}/memories/:memoryId`, "admin", "Delete a memory"),
  op("GET", `${M}/memory_versions`, "admin", "List memory versions"),
  op("POST", `${M}/memory_versions/:versionId/redact`, "admin", "Redact a memory version"),
  op("GET", `${M}/memory_versions/:versionId`, "admin", "Retrieve a memory version"),
  op("GET", M, "admin", "Retrieve a memory store"),
  op("POST", M, "admin", "Update a memory store"),
  op("DELETE", M, "admin", "Delete a memory store"),
  // Deployments and their runs.
  op("GET", "/v1/deployments", "admin", "List deployments"),
  op("POST", "/v1/deployments", "admin", "Create a deployment"),
  op("POST", `${D}/archive`, "admin", "Archive a deployment"),
  op("POST", `${D}/pause`, "admin", "Pause a deployment"),
  op("POST", `${D}/unpause`, "admin", "Unpause a deployment"),
  op("POST", `${D}/run`, "admin", "Run a deployment now"),
  op("GET", D, "admin", "Retrieve a deployment"),
  op("POST", D, "admin", "Update a deployment"),
  op("GET", "/v1/deployment_runs", "admin", "List deployment runs"),
  op("GET", "/v1/deployment_runs/:runId", "admin", "Retrieve a deployment run"),
  // Files.
  op("GET", "/v1/files", "admin", "List files"),
  op("POST", "/v1/files", "admin", "Upload a file"),
  op("GET", "/v1/files/:fileId/content", "admin", "Download a file's content"),
  op("GET", "/v1/files/:fileId", "admin", "Retrieve a file's metadata"),
  op("DELETE", "/v1/files/:fileId", "admin", "Delete a file"),
  // Messages and message batches.
  op("POST", "/v1/messages", "admin", "Create a message (streamed or not)"),
  op("POST", "/v1/messages/count_tokens", "admin", "Count a message's tokens"),
  op("GET", "/v1/messages/batches", "admin", "List message batches"),
  op("POST", "/v1/messages/batches", "admin", "Create a message batch"),
  op("POST", `${B}/cancel`, "admin", "Cancel a message batch"),
  op("GET", `${B}/results`, "admin", "Download a message batch's results"),
  op("GET", B, "admin", "Retrieve a message batch"),
  op("DELETE", B, "admin", "Delete a message batch"),
]);
