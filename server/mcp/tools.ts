/**
 * The MCP tools of the runtime. Each tool needs one capability: it is listed only to callers
 * holding it and checked again when called, against the principal authenticated on that very
 * request. Every tool runs the route that serves the same operation over HTTP (see
 * `_dispatch.ts`), so validation, authority rules, idempotency and results are the same.
 *
 * | tool | capability | HTTP twin |
 * |---|---|---|
 * | `runtime_info` | `session:read` | `GET /v1/runtime` |
 * | `principals_list` | `authority:admin` | `GET /v1/principals` |
 * | `principal_issue` | `authority:admin` | `POST /v1/principals` (with `idempotencyKey`) |
 * | `principal_revoke` | `authority:admin` | `DELETE /v1/principals/{id}` |
 *
 * Results carry the HTTP body as `structuredContent` (and as JSON text). Failures are tool
 * errors (`isError: true`) whose text is the HTTP error body, `{"error": {"code", "layer",
 * "message", "correlationId", ...}}`, with the same `code` values; nothing internal leaks.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/types"
import type { CallToolResult, Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { AuthenticatedPrincipal } from "../context.ts";
import { type ErrorBody, errorBody, refusalFor } from "../errors.ts";
import type { RouteDefinition } from "../router.ts";
import { type CreatePrincipalBody, principalRoutes } from "../routes/principals.ts";
import { parseRfc3339 } from "../time.ts";
import { runtimeRoutes } from "../routes/runtime.ts";
import { deadlineExceeded } from "../rules/deadline.ts";
import { invalidRequest } from "../rules/json.ts";
import type { RuntimeServices } from "../services.ts";
import { CAPABILITIES, type Capability } from "../store/types.ts";
import { type RouteOutcome, runRoute } from "./_dispatch.ts";

/** The `_meta` key set on a result replayed for a repeated idempotency key. */
export const REPLAYED_META_KEY = "automation-runtime/idempotent-replayed";

/** The request-scoped facts a tool call runs with. */
export interface McpToolCall {
  /** The caller, authenticated on the request carrying the call. */
  readonly principal: AuthenticatedPrincipal;
  /** The request's valid `x-correlation-id`, or null. */
  readonly correlationId: string | null;
  /** The request's `x-deadline` in ms since the epoch, or 0 when it carried none. */
  readonly deadline: number;
}

/** Options of {@linkcode McpToolset}. */
export interface McpToolsetOptions {
  /** Called after a principal was revoked through a tool (to close its MCP sessions). */
  onPrincipalRevoked?: (principalId: string) => unknown;
}

type JsonObjectSchema = Tool["inputSchema"];
type Outcome = (args: Record<string, unknown>, call: RunArgs) => Promise<RouteOutcome>;

interface RunArgs extends McpToolCall {
  readonly correlationId: string;
  readonly now: number;
}

interface ToolEntry {
  readonly capability: Capability;
  readonly definition: Tool;
  readonly run: Outcome;
  readonly shape?: (outcome: RouteOutcome, args: Record<string, unknown>) => unknown;
}

const capabilitySchema = z.enum(CAPABILITIES as [Capability, ...Capability[]]);

/**
 * The issuance body as a zod schema, for the tool's JSON Schema; the same rules as the route's
 * hand-written `createPrincipalSchema` (which keeps zod out of the service's startup).
 */
const createPrincipalSchema: z.ZodType<CreatePrincipalBody> = z.object({
  principalId: z.string().regex(
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    "Must be a lower-case UUID",
  ),
  capabilities: z.array(capabilitySchema)
    .min(1, "Must name at least one capability")
    .refine((list) => new Set(list).size === list.length, "Must not repeat a capability"),
  expiresAt: z.string().refine(
    (value) => parseRfc3339(value) !== null,
    "Must be an RFC 3339 timestamp",
  ),
  agentIds: z.array(z.string().min(1)).min(1).max(32).optional(),
  maxActiveRuns: z.number().int().min(1).max(100).optional(),
}).strict();

const runtimeInfoOutput = z.object({
  interfaceVersion: z.string(),
  principalId: z.string(),
  capabilities: z.array(capabilitySchema),
  expiresAt: z.string(),
  runs: z.boolean(),
  agentIds: z.array(z.string()).optional(),
  maxActiveRuns: z.number(),
});

const principalSummary = z.object({
  principalId: z.string(),
  capabilities: z.array(capabilitySchema),
  expiresAt: z.string(),
  issuerId: z.string(),
  createdAt: z.string(),
  agentIds: z.array(z.string()).optional(),
  maxActiveRuns: z.number(),
  revokedAt: z.string().optional(),
});

const principalsListOutput = z.object({
  principals: z.array(principalSummary),
  nextCursor: z.string().nullable(),
});

const issueOutput = z.object({
  principalId: z.string(),
  capabilities: z.array(capabilitySchema),
  expiresAt: z.string(),
  agentIds: z.array(z.string()).optional(),
  maxActiveRuns: z.number(),
  bearer: z.string(),
});

const revokeOutput = z.object({ principalId: z.string(), revoked: z.boolean() });

const noArguments = z.object({}).strict();
const listArguments = z.object({
  limit: z.number().int().min(1).max(500).optional()
    .describe("Most principals in the page, 1 to 500 (default 100)"),
  cursor: z.string().optional().describe("The nextCursor of the previous page"),
}).strict();

/** The query string of a `principals_list` call, as `GET /v1/principals` takes it. */
function listQuery(args: unknown): string {
  const parsed = listArguments.safeParse(args ?? {});
  if (!parsed.success) return "";
  const query = new URLSearchParams();
  if (parsed.data.limit !== undefined) query.set("limit", String(parsed.data.limit));
  if (parsed.data.cursor !== undefined) query.set("cursor", parsed.data.cursor);
  return query.size === 0 ? "" : `?${query}`;
}
const revokeArguments = z.object({
  principalId: z.string().describe("Lower-case UUID of the principal to revoke"),
}).strict();

const IDEMPOTENCY_KEY_SCHEMA = {
  type: "string",
  minLength: 1,
  maxLength: 128,
  pattern: "^[\\x20-\\x7e]+$",
  description: "Idempotency key (1 to 128 printable ASCII characters): a retry with the same " +
    "key and arguments returns the first result again, bearer included, instead of failing",
};

function jsonSchema(schema: z.ZodType): JsonObjectSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: "input" });
  return rest as JsonObjectSchema;
}

function outputSchema(schema: z.ZodType): JsonObjectSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: "output" });
  return rest as JsonObjectSchema;
}

function parseArguments<T>(schema: z.ZodType<T>, args: unknown): T {
  const result = schema.safeParse(args);
  if (result.success) return result.data;
  throw invalidRequest(
    result.error.issues.map((issue) => ({
      path: issue.path.map(String).join("."),
      message: issue.message,
    })),
  );
}

function findRoute(routes: readonly RouteDefinition[], method: string, path: string) {
  const route = routes.find((entry) => entry.method === method && entry.path === path);
  if (route === undefined) throw new Error(`The route ${method} ${path} is missing`);
  return route;
}

function requiredCapability(route: RouteDefinition): Capability {
  if (route.capability === undefined) {
    throw new Error(`The route ${route.method} ${route.path} needs no capability`);
  }
  return route.capability;
}

function toolPath(name: string): string {
  return `/v1/mcp/tools/${name}`;
}

/**
 * The runtime's MCP tools, bound to one server's shared parts.
 */
export class McpToolset {
  #services: RuntimeServices;
  #tools: ReadonlyMap<string, ToolEntry>;

  /**
   * Builds the tools over the server's routes.
   */
  constructor(services: RuntimeServices, options: McpToolsetOptions = {}) {
    this.#services = services;
    const principals = principalRoutes(services);
    const runtime = findRoute(runtimeRoutes(), "GET", "/v1/runtime");
    const list = findRoute(principals, "GET", "/v1/principals");
    const issue = findRoute(principals, "POST", "/v1/principals");
    const revoke = findRoute(principals, "DELETE", "/v1/principals/:principalId");
    const onRevoked = options.onPrincipalRevoked;

    const entries: [string, ToolEntry][] = [
      ["runtime_info", {
        capability: requiredCapability(runtime),
        definition: {
          name: "runtime_info",
          title: "Runtime info",
          description: "The runtime's interface version and the caller's own principal id, " +
            "capabilities and expiry (as GET /v1/runtime).",
          inputSchema: jsonSchema(noArguments),
          outputSchema: outputSchema(runtimeInfoOutput),
          annotations: readOnly(),
        },
        run: (args, call) =>
          runRoute(runtime, services, {
            ...call,
            path: toolPath("runtime_info"),
            prepare: () => parseArguments(noArguments, args),
          }),
      }],
      ["principals_list", {
        capability: requiredCapability(list),
        definition: {
          name: "principals_list",
          title: "List principals",
          description: "One page of principals, oldest first, without bearers or digests; " +
            "revoked ones carry revokedAt; pass nextCursor back as cursor for the next page " +
            "(as GET /v1/principals).",
          inputSchema: jsonSchema(listArguments),
          outputSchema: outputSchema(principalsListOutput),
          annotations: readOnly(),
        },
        run: (args, call) =>
          runRoute(list, services, {
            ...call,
            path: toolPath("principals_list") + listQuery(args),
            prepare: () => parseArguments(listArguments, args),
          }),
      }],
      ["principal_issue", {
        capability: requiredCapability(issue),
        definition: {
          name: "principal_issue",
          title: "Issue a principal",
          description: "Issues a scoped principal and returns its one-time bearer, which " +
            "cannot be retrieved again: hand it to its holder at once (as POST /v1/principals). " +
            "capabilities must be a subset of the caller's, never authority:admin; expiresAt " +
            "at most 90 days ahead. Pass idempotencyKey to make retries safe.",
          inputSchema: issueInputSchema(),
          outputSchema: outputSchema(issueOutput),
          annotations: {
            readOnlyHint: false,
            destructiveHint: false,
            idempotentHint: false,
            openWorldHint: false,
          },
        },
        run: (args, call) => {
          const { idempotencyKey, ...body } = args;
          return runRoute(issue, services, {
            ...call,
            path: toolPath("principal_issue"),
            body,
            idempotencyKey: typeof idempotencyKey === "string" ? idempotencyKey : undefined,
            prepare: () => {
              if (idempotencyKey !== undefined && typeof idempotencyKey !== "string") {
                throw invalidRequest([{ path: "idempotencyKey", message: "Must be a string" }]);
              }
            },
          });
        },
      }],
      ["principal_revoke", {
        capability: requiredCapability(revoke),
        definition: {
          name: "principal_revoke",
          title: "Revoke a principal",
          description: "Revokes a principal at once: its bearer is refused from the next " +
            "request on, and its MCP sessions end (as DELETE /v1/principals/{id}). Revoking " +
            "an already revoked principal succeeds again.",
          inputSchema: jsonSchema(revokeArguments),
          outputSchema: outputSchema(revokeOutput),
          annotations: {
            readOnlyHint: false,
            destructiveHint: true,
            idempotentHint: true,
            openWorldHint: false,
          },
        },
        run: async (args, call) => {
          const principalId = typeof args.principalId === "string" ? args.principalId : "";
          const outcome = await runRoute(revoke, services, {
            ...call,
            path: toolPath("principal_revoke"),
            params: { principalId },
            prepare: () => parseArguments(revokeArguments, args),
          });
          if (outcome.status < 300) await onRevoked?.(principalId);
          return outcome;
        },
        shape: (_outcome, args) => ({ principalId: args.principalId, revoked: true }),
      }],
    ];
    this.#tools = new Map(entries);
  }

  /**
   * The tools a principal may see: those whose capability it holds.
   */
  list(principal: AuthenticatedPrincipal): Tool[] {
    const visible: Tool[] = [];
    for (const entry of this.#tools.values()) {
      if (principal.capabilities.includes(entry.capability)) visible.push(entry.definition);
    }
    return visible;
  }

  /**
   * Whether a tool of this name exists (whoever may call it).
   */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /**
   * Calls a tool. Never throws for a known tool: every failure is a tool error carrying the
   * HTTP error body.
   */
  async call(
    name: string,
    args: Record<string, unknown> | undefined,
    call: McpToolCall,
  ): Promise<CallToolResult> {
    const entry = this.#tools.get(name);
    if (entry === undefined) throw new RangeError(`Unknown tool ${name}`);
    const now = this.#services.now();
    const correlationId = call.correlationId ?? crypto.randomUUID();
    try {
      if (call.deadline > 0 && call.deadline <= now) throw deadlineExceeded();
      const input = args ?? {};
      const outcome = await entry.run(input, { ...call, correlationId, now });
      if (outcome.status >= 400) return failure(outcome.body as ErrorBody);
      const body = entry.shape?.(outcome, input) ?? outcome.body;
      return success(body as Record<string, unknown>, outcome.replayed);
    } catch (error) {
      return failure(
        errorBody(refusalFor(error, this.#services.logger, { tool: name }), correlationId),
      );
    }
  }
}

function readOnly(): ToolAnnotations {
  return { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
}

function issueInputSchema(): JsonObjectSchema {
  const schema = jsonSchema(createPrincipalSchema);
  const properties = { ...schema.properties };
  const describe = (name: string, description: string) => {
    const property = properties[name];
    if (property !== null && typeof property === "object") {
      properties[name] = { ...property, description };
    }
  };
  describe("principalId", "Lower-case UUID of the new principal, chosen by the caller");
  describe(
    "capabilities",
    "Capabilities to grant: a subset of the caller's, never authority:admin",
  );
  describe("expiresAt", "RFC 3339 expiry, in the future and at most 90 days ahead");
  describe(
    "agentIds",
    "Agent ids the principal may start runs on: a subset of the caller's (default: the caller's)",
  );
  describe("maxActiveRuns", "Active runs allowed, 1 to 100, at most the caller's (default 8)");
  properties.idempotencyKey = IDEMPOTENCY_KEY_SCHEMA;
  return { ...schema, properties };
}

function success(body: Record<string, unknown>, replayed: boolean): CallToolResult {
  const result: CallToolResult = {
    content: [{ type: "text", text: JSON.stringify(body) }],
    structuredContent: body,
  };
  if (replayed) result._meta = { [REPLAYED_META_KEY]: true };
  return result;
}

function failure(body: ErrorBody): CallToolResult {
  return { isError: true, content: [{ type: "text", text: JSON.stringify(body) }] };
}
