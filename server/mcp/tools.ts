/**
 * The MCP tools of the runtime, bound to the server's route table. Each declaration of
 * `tool_catalog.ts` names its HTTP twin; a tool is offered only when that route is in the
 * table, and it needs the route's own capability: it is listed only to callers holding it and
 * checked again when called, against the principal authenticated on that very request. Every
 * call runs the twin route in process (see `_dispatch.ts`), so validation, authority rules,
 * idempotency, audit entries and results are the same as over HTTP.
 *
 * Results carry the HTTP body as `structuredContent` (and as JSON text). Failures are tool
 * errors (`isError: true`) whose text is the HTTP error body, `{"error": {"code", "layer",
 * "message", "correlationId", ...}}`, with the same `code` values; nothing internal leaks.
 *
 * Idempotency: a mutating tool's `idempotencyKey` is scoped like the HTTP key, to (principal,
 * method, the twin's path, key); the same key used for the same operation over HTTP and over
 * MCP is one key.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/types"
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Rule } from "../chain.ts";
import type { AuthenticatedPrincipal, RequestContext } from "../context.ts";
import { type ErrorBody, errorBody, refusalFor } from "../errors.ts";
import type { RouteDefinition } from "../router.ts";
import { principalRoutes } from "../routes/principals.ts";
import { runtimeRoutes } from "../routes/runtime.ts";
import { deadlineExceeded } from "../rules/deadline.ts";
import { heldSlot } from "../rules/quota.ts";
import { invalidRequest } from "../rules/json.ts";
import type { RuntimeServices } from "../services.ts";
import type { Capability } from "../store/types.ts";
import { type RouteOutcome, runRoute } from "./_dispatch.ts";
import { argumentSchema, TOOL_CATALOG, type ToolDeclaration } from "./tool_catalog.ts";

/** The `_meta` key set on a result replayed for a repeated idempotency key. */
export const REPLAYED_META_KEY = "automation-runtime/idempotent-replayed";

/** How often a waiting `run_events` call reads the event log again, in ms. */
const WAIT_POLL_MS = 1_000;

/** The request-scoped facts a tool call runs with. */
export interface McpToolCall {
  /** The caller, authenticated on the request carrying the call. */
  readonly principal: AuthenticatedPrincipal;
  /** The request's valid `x-correlation-id`, or null. */
  readonly correlationId: string | null;
  /** The request's `x-deadline` in ms since the epoch, or 0 when it carried none. */
  readonly deadline: number;
  /** Aborted when the host cancels the request or the session ends. */
  readonly signal?: AbortSignal;
}

/** Options of {@linkcode McpToolset}. */
export interface McpToolsetOptions {
  /**
   * The server's route table; tools bind to their twin routes in it (default: the principal
   * and runtime routes only, for an endpoint embedded without a table).
   */
  routes?: readonly RouteDefinition[];
  /** Called after a principal was revoked through a tool (to close its MCP sessions). */
  onPrincipalRevoked?: (principalId: string) => unknown;
  /**
   * Whether a principal is still valid (not revoked, not expired), asked before each re-read
   * of a waiting `run_events` call, so a revoked caller stops receiving events at once.
   */
  isPrincipalValid?: (principalId: string) => Promise<boolean>;
}

type JsonObjectSchema = Tool["inputSchema"];

interface BoundTool {
  readonly declaration: ToolDeclaration;
  readonly route: RouteDefinition;
  readonly capability: Capability;
  readonly arguments: z.ZodObject;
  readonly definition: Tool;
}

function jsonSchema(schema: z.ZodType, io: "input" | "output"): JsonObjectSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" });
  return rest as JsonObjectSchema;
}

function parseArguments(schema: z.ZodObject, args: unknown): Record<string, unknown> {
  const result = schema.safeParse(args);
  if (result.success) return result.data as Record<string, unknown>;
  throw invalidRequest(
    result.error.issues.map((issue) => ({
      path: issue.path.map(String).join("."),
      message: issue.message,
    })),
  );
}

/** Fills a path template (`/v1/runs/:runId`) with encoded arguments. */
function fillPath(template: string, args: Record<string, unknown>): string {
  return template.replace(
    /:([A-Za-z]+)/g,
    (_match, name: string) => encodeURIComponent(String(args[name])),
  );
}

function queryOf(declaration: ToolDeclaration, args: Record<string, unknown>): string {
  if (declaration.query === undefined) return "";
  const query = new URLSearchParams();
  for (const name of Object.keys(declaration.query.shape)) {
    const value = args[name];
    if (value !== undefined) query.set(name, String(value));
  }
  return query.size === 0 ? "" : `?${query}`;
}

function bodyOf(declaration: ToolDeclaration, args: Record<string, unknown>): unknown {
  if (declaration.body === undefined) return undefined;
  const body: Record<string, unknown> = {};
  for (const name of Object.keys(declaration.body.shape)) {
    if (args[name] !== undefined) body[name] = args[name];
  }
  return body;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The routes of an endpoint embedded without the server's table. */
function fallbackRoutes(services: RuntimeServices): RouteDefinition[] {
  return [...runtimeRoutes(), ...principalRoutes(services)];
}

/**
 * The runtime's MCP tools, bound to one server's shared parts and route table.
 */
export class McpToolset {
  #services: RuntimeServices;
  #tools: ReadonlyMap<string, BoundTool>;
  #onRevoked: McpToolsetOptions["onPrincipalRevoked"];
  #isPrincipalValid: McpToolsetOptions["isPrincipalValid"];

  /**
   * Binds every declared tool whose twin route is in the table.
   */
  constructor(services: RuntimeServices, options: McpToolsetOptions = {}) {
    this.#services = services;
    this.#onRevoked = options.onPrincipalRevoked;
    this.#isPrincipalValid = options.isPrincipalValid;
    const routes = options.routes ?? fallbackRoutes(services);
    const tools = new Map<string, BoundTool>();
    for (const declaration of TOOL_CATALOG) {
      const route = routes.find((entry) =>
        entry.method === declaration.method && entry.path === declaration.path
      );
      // A twin route that is not served (yet) means no tool: nothing half-works.
      if (route === undefined || route.capability === undefined) continue;
      const args = argumentSchema(declaration, "check");
      const definition: Tool = {
        name: declaration.name,
        title: declaration.title,
        description: declaration.description,
        inputSchema: jsonSchema(argumentSchema(declaration, "publish"), "input"),
        annotations: declaration.annotations,
      };
      if (declaration.output !== undefined) {
        definition.outputSchema = jsonSchema(declaration.output, "output");
      }
      tools.set(declaration.name, {
        declaration,
        route,
        capability: route.capability,
        arguments: args,
        definition,
      });
    }
    this.#tools = tools;
  }

  /**
   * The tools a principal may see: those whose capability it holds.
   */
  list(principal: AuthenticatedPrincipal): Tool[] {
    const visible: Tool[] = [];
    for (const tool of this.#tools.values()) {
      if (principal.capabilities.includes(tool.capability)) visible.push(tool.definition);
    }
    return visible;
  }

  /**
   * Whether a tool of this name is offered (whoever may call it).
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
    const tool = this.#tools.get(name);
    if (tool === undefined) throw new RangeError(`Unknown tool ${name}`);
    const now = this.#services.now();
    const correlationId = call.correlationId ?? crypto.randomUUID();
    // The call's own in-flight slot, taken at its quota step and held until it returns: its
    // MCP request may be answered long before (a stream), and `waitMs` may hold it for a while.
    const slot = heldSlot(this.#services.quota, call.principal.principalId);
    try {
      if (call.deadline > 0 && call.deadline <= now) throw deadlineExceeded();
      const input = args ?? {};
      let outcome = await this.#run(tool, input, call, correlationId, now, slot.rule);
      const waitMs = typeof input.waitMs === "number" ? input.waitMs : 0;
      if (waitMs > 0) {
        outcome = await this.#wait(tool, input, call, correlationId, outcome, waitMs, slot.rule);
      }
      if (outcome.status >= 400) return failure(outcome.body as ErrorBody);
      if (outcome.status < 300 && tool.declaration.name === "principal_revoke") {
        await this.#onRevoked?.(String(input.principalId));
      }
      const body = tool.declaration.shape?.(outcome.body, input) ?? outcome.body;
      return success(body as Record<string, unknown>, outcome.replayed);
    } catch (error) {
      return failure(
        errorBody(refusalFor(error, this.#services.logger, { tool: name }), correlationId),
      );
    } finally {
      slot.release();
    }
  }

  /** Runs the twin route once; the tool's own arguments are checked in the shared rule order. */
  #run(
    tool: BoundTool,
    input: Record<string, unknown>,
    call: McpToolCall,
    correlationId: string,
    now: number,
    quota: Rule<RequestContext>,
  ): Promise<RouteOutcome> {
    const declaration = tool.declaration;
    const valid = tool.arguments.safeParse(input).success;
    // Arguments that fail their schema never reach the path, query or body: prepare refuses.
    const path = valid ? fillPath(declaration.path, input) : declaration.path;
    const key = input.idempotencyKey;
    return runRoute(tool.route, this.#services, {
      principal: call.principal,
      correlationId,
      deadline: call.deadline,
      now,
      path: path + (valid ? queryOf(declaration, input) : ""),
      params: valid
        ? Object.fromEntries((declaration.params ?? []).map((name) => [name, String(input[name])]))
        : {},
      body: valid ? bodyOf(declaration, input) : {},
      idempotencyKey: declaration.idempotent && typeof key === "string" ? key : undefined,
      accept: declaration.accept,
      prepare: () => void parseArguments(tool.arguments, input),
      quota,
    });
  }

  /**
   * `run_events` with `waitMs`: while the page is empty and not terminal, reads it again every
   * second until an event arrives, the wait or the request's deadline ends, the host cancels,
   * or the caller is no longer valid. The host itself never needs to poll faster than that.
   */
  async #wait(
    tool: BoundTool,
    input: Record<string, unknown>,
    call: McpToolCall,
    correlationId: string,
    first: RouteOutcome,
    waitMs: number,
    quota: Rule<RequestContext>,
  ): Promise<RouteOutcome> {
    const services = this.#services;
    const started = services.now();
    let end = started + waitMs;
    if (call.deadline > 0) end = Math.min(end, call.deadline - WAIT_POLL_MS / 10);
    let outcome = first;
    while (isEmptyPage(outcome) && !call.signal?.aborted) {
      const remaining = end - services.now();
      if (remaining <= 0) break;
      await sleep(Math.min(WAIT_POLL_MS, remaining), call.signal);
      if (call.signal?.aborted) break;
      if (
        this.#isPrincipalValid !== undefined &&
        !(await this.#isPrincipalValid(call.principal.principalId))
      ) {
        break;
      }
      outcome = await this.#run(tool, input, call, correlationId, services.now(), quota);
    }
    return outcome;
  }
}

function isEmptyPage(outcome: RouteOutcome): boolean {
  if (outcome.status !== 200) return false;
  const body = outcome.body as { events?: unknown[]; terminal?: boolean } | null;
  return Array.isArray(body?.events) && body.events.length === 0 && body.terminal !== true;
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
