/**
 * The MCP streamable HTTP endpoint at `/v1/mcp` (revision 2025-11-25 and the older revisions
 * the SDK negotiates): POST carries JSON-RPC messages (answered as SSE, or JSON when
 * configured), GET opens the session's SSE channel (resumable with `Last-Event-ID`), DELETE
 * ends the session. The SDK's `WebStandardStreamableHTTPServerTransport` speaks the protocol;
 * this module puts the runtime's own rules in front of it, in this order:
 *
 * | # | condition | status | body |
 * |---|---|---|---|
 * | 1 | `Origin` present and not allowed, or `Host` not allowed (DNS rebinding) | 403 | `originNotAllowed` |
 * | 2 | method other than GET, POST, DELETE (OPTIONS answers CORS preflights) | 405 | `methodNotAllowed` |
 * | 3 | a security-sensitive header sent twice, or a bearer in the query or a cookie | 400 | `duplicateHeader` |
 * | 4 | missing, unknown, revoked or expired bearer | 401 | `authenticationFailed` / `tokenExpired` |
 * | 5 | `x-correlation-id` / `x-deadline` present but invalid | 400 / 408 | as `/v1/*` |
 * | 6 | too many requests in flight / sessions for the principal (a POST holds its slot until its body is handed to the transport; each tool call then holds one of its own until it returns) | 429 | `resourceExhausted` |
 * | 7 | no `Mcp-Session-Id` on GET or DELETE | 400 | JSON-RPC error |
 * | 8 | a session id not minted for this principal (unknown, forged, or another principal's) | 404 | JSON-RPC error |
 * | 9 | body over the limit (POST) | 413 | `payloadTooLarge` |
 * | 10 | the transport's own checks: `Accept`, `Content-Type`, JSON-RPC shape, an unsupported `MCP-Protocol-Version` | 406 / 415 / 400 | JSON-RPC error |
 *
 * Rows 1 to 6 and 9 answer with the runtime's error body `{"error": {"code", ...}}`; the
 * session and protocol rows answer with a JSON-RPC error object, as MCP clients expect.
 *
 * Like the SDK's own server, any supported `MCP-Protocol-Version` is accepted after
 * `initialize` (not only the negotiated one), and several POSTs of one session run at once.
 *
 * Several replicas: session ids are self-certifying (`session_id.ts`), bound to the principal
 * that opened the session. A replica that receives a session it does not hold adopts it: it
 * builds the session's transport and protocol server and initializes them in process with the
 * revision the id carries, then serves the request. So a client works through a load balancer
 * without session affinity; what stays on one replica is per-replica state only (the SSE
 * replay buffer of `Last-Event-ID`, the idle timer, the session quotas, the `logging/setLevel`
 * level). An idle timeout frees a replica's state of the session, not the session: its next
 * request is adopted again. A DELETE ends the session on the replica that receives it (404
 * there from then on); another replica would still adopt the id for the same principal, which
 * grants nothing that principal could not get by opening a new session.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import { compose, type Next, type Rule, whileAnswering } from "../chain.ts";
import type { AuthenticatedPrincipal, RequestContext } from "../context.ts";
import { errorResponse, InterfaceError } from "../errors.ts";
import { boundedField, MAX_LOGGED_METHOD } from "../log.ts";
import type { RouteDefinition } from "../router.ts";
import { authenticateRule } from "../rules/authenticate.ts";
import { readLimitedBody } from "../rules/body.ts";
import { correlationRule } from "../rules/correlation.ts";
import { deadlineRule } from "../rules/deadline.ts";
import { duplicatesRule } from "../rules/duplicates.ts";
import { inRuleOrder } from "../rules/order.ts";
import { heldSlot } from "../rules/quota.ts";
import { type OpenStream, OpenStreams } from "../runs/open_streams.ts";
import type { RuntimeServices } from "../services.ts";
import { parseRfc3339 } from "../time.ts";
import { ReplayBudget, SessionEventStore } from "./event_store.ts";
import { initializeRequest, internalPost, negotiatedVersion, withBody } from "./_requests.ts";
import { onBodyEnd, trackBody } from "./_tracked_body.ts";
import { SessionIds } from "./session_id.ts";
import { OriginPolicy, type OriginPolicyOptions } from "./origin.ts";
import { createProtocolServer, requestAuthInfo } from "./protocol.ts";
import {
  type McpSessionHandle,
  McpSessionRegistry,
  type McpSessionReservation,
  type ReserveRefusal,
} from "./sessions.ts";
import { McpToolset } from "./tools.ts";

/** Path of the MCP endpoint. */
export const MCP_PATH = "/v1/mcp";

/** Methods the endpoint serves. */
const SERVED = ["GET", "POST", "DELETE"];

/** Methods routed to the endpoint, so that its origin check answers before a 405. */
const ROUTED = [...SERVED, "OPTIONS", "PUT", "PATCH", "HEAD"];

const ALLOW = SERVED.join(", ");

const CORS_REQUEST_HEADERS = [
  "authorization",
  "content-type",
  "accept",
  "last-event-id",
  "mcp-session-id",
  "mcp-protocol-version",
  "x-correlation-id",
  "x-deadline",
].join(", ");

const CORS_EXPOSED_HEADERS = [
  "mcp-session-id",
  "mcp-protocol-version",
  "www-authenticate",
  "x-correlation-id",
  "x-deadline",
  "retry-after",
].join(", ");

/** Options of the MCP endpoint. */
export interface McpOptions extends OriginPolicyOptions {
  /** Idle time after which a session ends, in ms (default 15 min). */
  idleTimeoutMs?: number;
  /** Most sessions at once (default 1024). */
  maxSessions?: number;
  /** Most sessions one principal may hold (default 32). */
  maxSessionsPerPrincipal?: number;
  /** Answer POSTs with one JSON body instead of an SSE stream (default false). */
  jsonResponse?: boolean;
  /** Events kept per session for `Last-Event-ID` resumption (default 512). */
  maxEventsPerSession?: number;
  /** Bytes of those events kept per session (default 1 MiB). */
  maxReplayBytesPerSession?: number;
  /** Bytes of those events kept across every session of the endpoint (default 64 MiB). */
  maxReplayBytes?: number;
  /** Interval of SSE keep-alive comments, in ms (default 15000; 0 turns them off). */
  keepAliveMs?: number;
  /** Reconnection delay suggested to clients in the SSE `retry` field, in ms (default unset). */
  retryIntervalMs?: number;
  /** How often idle, expired and revoked sessions are swept, in ms (default ≤ 30 s). */
  sweepIntervalMs?: number;
}

/** The mounted endpoint. */
export interface McpEndpoint {
  /** The routes to add to the server's router (`kind: "custom"`). */
  readonly routes: readonly RouteDefinition[];
  /** Number of live sessions. */
  readonly sessionCount: number;
  /** Ends every session and its streams; later sessions are refused. */
  close(): Promise<void>;
}

interface McpSession extends McpSessionHandle {
  readonly transport: WebStandardStreamableHTTPServerTransport;
  /** The protocol revision negotiated by `initialize`. */
  readonly protocolVersion: string;
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), {
    status,
    headers: { "content-type": "application/json" },
  });
}

function sessionNotFound(): Response {
  return jsonRpcError(404, -32001, "Session not found");
}

function sessionRefusal(reason: ReserveRefusal): InterfaceError {
  if (reason === "closed") {
    return new InterfaceError("resourceExhausted", "The runtime is shutting down", {
      status: 503,
      headers: { "retry-after": "1" },
    });
  }
  const message = reason === "principalFull"
    ? "Too many MCP sessions for this principal; end one with DELETE first"
    : "Too many MCP sessions on this runtime";
  return new InterfaceError("resourceExhausted", message, { headers: { "retry-after": "60" } });
}

function whenPresent(
  present: (context: RequestContext) => boolean,
  rule: Rule<RequestContext>,
): Rule<RequestContext> {
  return (context, next) => present(context) ? rule(context, next) : next();
}

/**
 * Creates the MCP endpoint over a server's shared parts. `table` is the server's route table:
 * each tool runs its HTTP twin from it, and a tool whose twin is missing is not offered
 * (default: the runtime and principal routes only).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deriveBootstrapCredential } from "../bootstrap/credential.ts";
 * import { createJsonLogger } from "../log.ts";
 * import { createRuntimeServer } from "../server.ts";
 * import { openKvStore } from "../store/mod.ts";
 * import { createMcpEndpoint, MCP_PATH } from "./endpoint.ts";
 * const bootstrap = deriveBootstrapCredential({
 *   token: "art_" + crypto.randomUUID().replaceAll("-", "").repeat(2),
 *   principalId: crypto.randomUUID(),
 *   capabilities: ["authority:admin"],
 *   expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
 *   source: "environment",
 * });
 * const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
 * const server = createRuntimeServer({ bootstrap, store, logger: createJsonLogger({ write() {} }) });
 * // A second endpoint over the server's shared parts, for embedding under another router.
 * const mcp = createMcpEndpoint(server.services, { allowedOrigins: ["loopback"] });
 * try {
 *   assert.ok(mcp.routes.every((route) => route.path === MCP_PATH && route.kind === "custom"));
 *   assert.equal(mcp.sessionCount, 0);
 * } finally {
 *   await mcp.close(); // ends every session and its streams
 *   await server.close();
 *   await store.close();
 * }
 * ```
 */
export function createMcpEndpoint(
  services: RuntimeServices,
  options: McpOptions = {},
  table?: readonly RouteDefinition[],
): McpEndpoint {
  const policy = new OriginPolicy(options);
  const sessions: McpSessionRegistry<McpSession> = new McpSessionRegistry<McpSession>({
    idleTimeoutMs: options.idleTimeoutMs,
    maxSessions: options.maxSessions,
    maxSessionsPerPrincipal: options.maxSessionsPerPrincipal,
    sweepIntervalMs: options.sweepIntervalMs,
    now: services.now,
    isPrincipalValid,
  });
  const tools = new McpToolset(services, {
    routes: table,
    onPrincipalRevoked: (principalId) => sessions.closePrincipal(principalId),
    isPrincipalValid,
  });
  const sessionIds = new SessionIds(services.bootstrap.authorityKey);
  /** The bytes of replay events all sessions keep together. */
  const replayBudget = new ReplayBudget(options.maxReplayBytes);
  /** The sessions' open GET streams, their credentials re-checked twice a second. */
  const openStreams = new OpenStreams({ authenticator: services.authenticator, now: services.now });
  /** Adoptions under way, by session id, so concurrent requests adopt a session once. */
  const adopting = new Map<string, Promise<McpSession | null>>();
  /**
   * Sessions their client ended here with DELETE, with when their principal expires: this
   * replica never adopts them again. Bounded; the oldest go first.
   */
  const deleted = new Map<string, number>();
  const maxDeleted = 4 * sessions.maxSessions;
  const maxBytes = services.maxBodyBytes;

  async function isPrincipalValid(principalId: string): Promise<boolean> {
    const now = services.now();
    const bootstrap = services.authenticator.bootstrapPrincipal;
    if (principalId === bootstrap.principalId) return now < bootstrap.expiresAtMs;
    const record = await services.store.principals.get(principalId);
    if (record === null || record.revokedAt !== null) return false;
    return now < (parseRfc3339(record.expiresAt) ?? Number.NaN);
  }

  /** Rule 1: the origin and host. Its refusal carries no CORS headers. */
  function origins(context: RequestContext, next: Next): Response | Promise<Response> {
    const refusal = policy.check(context.request);
    if (refusal !== null) throw refusal;
    return next();
  }

  /** CORS headers (and the echoed deadline) on every answer after rule 1, refusals included. */
  async function cors(context: RequestContext, next: Next): Promise<Response> {
    const response = await next();
    return decorate(response, context, context.request.headers.get("origin"));
  }

  /** Rule 2, and the answer to a CORS preflight. */
  function methods(context: RequestContext, next: Next): Response | Promise<Response> {
    if (context.method === "OPTIONS") {
      return preflight(context.request.headers.get("origin") !== null);
    }
    if (!SERVED.includes(context.method)) {
      throw new InterfaceError(
        "methodNotAllowed",
        `Method ${boundedField(context.method, MAX_LOGGED_METHOD)} is not allowed here`,
        {
          headers: { allow: ALLOW },
          extra: { allowedMethods: SERVED },
        },
      );
    }
    return next();
  }

  function preflight(cors: boolean): Response {
    const headers = new Headers({ allow: `${ALLOW}, OPTIONS` });
    if (cors) {
      headers.set("access-control-allow-methods", ALLOW);
      headers.set("access-control-allow-headers", CORS_REQUEST_HEADERS);
      headers.set("access-control-max-age", "600");
    }
    return new Response(null, { status: 204, headers });
  }

  function decorate(response: Response, context: RequestContext, origin: string | null): Response {
    const headers = response.headers;
    if (origin !== null) {
      headers.set("access-control-allow-origin", origin);
      headers.set("access-control-expose-headers", CORS_EXPOSED_HEADERS);
      headers.append("vary", "origin");
    }
    if (context.deadline > 0 && context.deadlineHeader !== null) {
      headers.set("x-deadline", context.deadlineHeader);
    }
    return response;
  }

  async function readBody(context: RequestContext): Promise<Uint8Array> {
    const elapsed = performance.now() - context.startedAt;
    const timeoutMs = context.deadline > 0
      ? context.deadline - context.receivedAt - elapsed
      : undefined;
    return await readLimitedBody(context.request, { maxBytes, timeoutMs });
  }

  function callOf(context: RequestContext, principal: AuthenticatedPrincipal) {
    return requestAuthInfo({
      principal,
      correlationId: context.correlationId,
      deadline: context.deadline,
    });
  }

  /** The in-flight slot of each MCP request, until it is answered or hands its body over. */
  const slots = new WeakMap<RequestContext, () => void>();

  /**
   * Rule 6, the in-flight quota: the request holds a slot until it is answered, or, for a POST,
   * until its body is read and handed to the transport ({@linkcode handOff}).
   */
  function requestSlot(context: RequestContext, next: Next): Response | Promise<Response> {
    const slot = heldSlot(services.quota, context.principal?.principalId ?? "");
    slots.set(context, slot.release);
    return slot.rule(context, () => whileAnswering(next, slot.release));
  }

  /**
   * A POST's JSON-RPC messages are the transport's from here: each tool call among them takes a
   * slot of its own, held for as long as the call runs (`tools.ts`), however early the request
   * is answered (a stream answers at once). The request gives its own slot back now, so a call
   * is never counted twice.
   */
  function handOff(context: RequestContext): void {
    slots.get(context)?.();
  }

  /** Rules 7 to 10 and the hand-over to the session's transport. */
  async function dispatch(context: RequestContext): Promise<Response> {
    const principal = context.principal!;
    const request = context.request;
    const sessionId = request.headers.get("mcp-session-id");
    if (sessionId === null) {
      if (context.method !== "POST") {
        return jsonRpcError(400, -32000, "Bad Request: Mcp-Session-Id header is required");
      }
      return await open(context, principal);
    }
    const session = sessions.lookup(sessionId, principal.principalId) ??
      await adopt(sessionId, principal);
    if (session === null) return sessionNotFound();
    const release = sessions.hold(session.id);
    try {
      let forwarded = request;
      if (context.method === "POST") {
        forwarded = withBody(request, await readBody(context));
        handOff(context);
      }
      const response = await session.transport.handleRequest(forwarded, {
        authInfo: callOf(context, principal),
      });
      if (context.method === "DELETE" && response.ok) forget(session);
      if (context.method === "GET" && response.ok) return watched(context, response, release);
      return onBodyEnd(response, release);
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * A session's GET stream (its standalone channel, or a `Last-Event-ID` replay), followed among
   * the endpoint's open streams: its credential is re-checked twice a second, so the stream ends
   * within a second of its principal's revocation or expiry, on every replica, as the run event
   * streams do; and every such stream ends when the endpoint closes.
   */
  function watched(context: RequestContext, response: Response, release: () => void): Response {
    const stream: OpenStream = {
      authorization: context.authorization,
      end: () => tracked.end(),
    };
    const tracked = trackBody(response, () => {
      openStreams.delete(stream);
      release();
    });
    openStreams.add(stream);
    return tracked.response;
  }

  /**
   * A session this replica does not hold: when its id was minted for this principal (here or
   * on another replica), builds it and initializes it in process; else null (404).
   */
  function adopt(id: string, principal: AuthenticatedPrincipal): Promise<McpSession | null> {
    if (deleted.has(id)) return Promise.resolve(null);
    const verified = sessionIds.verify(id, principal.principalId);
    if (verified === null || !SUPPORTED_PROTOCOL_VERSIONS.includes(verified.protocolVersion)) {
      return Promise.resolve(null);
    }
    let adoption = adopting.get(id);
    if (adoption === undefined) {
      adoption = adoptOnce(id, principal, verified.protocolVersion)
        .finally(() => adopting.delete(id));
      adopting.set(id, adoption);
    }
    return adoption.then((session) =>
      session !== null && session.principalId === principal.principalId ? session : null
    );
  }

  async function adoptOnce(
    id: string,
    principal: AuthenticatedPrincipal,
    protocolVersion: string,
  ): Promise<McpSession | null> {
    const existing = sessions.lookup(id, principal.principalId);
    if (existing !== undefined) return existing;
    const reservation = sessions.reserve(principal.principalId);
    if (typeof reservation === "string") throw sessionRefusal(reservation);
    const built = build(principal, protocolVersion, reservation, () => id);
    try {
      await built.server.connect(built.transport);
      // The session's own initialize, replayed in process: the transport and the protocol
      // server reach the state they had on the replica that opened the session.
      const init = await built.transport.handleRequest(internalPost(initializeRequest(
        protocolVersion,
      )));
      await init.body?.cancel();
      const initialized = await built.transport.handleRequest(
        internalPost({ jsonrpc: "2.0", method: "notifications/initialized" }, id, protocolVersion),
      );
      await initialized.body?.cancel();
      return built.session();
    } finally {
      if (built.session() === null) {
        reservation.cancel();
        await built.server.close();
      }
    }
  }

  /** Remembers a session its client ended, so this replica answers 404 for it from now on. */
  function forget(session: McpSession): void {
    const now = services.now();
    for (const [id, expiresAtMs] of deleted) {
      if (expiresAtMs <= now || deleted.size >= maxDeleted) deleted.delete(id);
      else break;
    }
    deleted.set(session.id, session.expiresAtMs);
  }

  /** A session's transport and protocol server, registered once the transport names it. */
  function build(
    principal: AuthenticatedPrincipal,
    protocolVersion: string,
    reservation: McpSessionReservation<McpSession>,
    sessionIdGenerator: () => string,
  ) {
    let session: McpSession | null = null;
    const server = createProtocolServer(tools);
    const eventStore = new SessionEventStore({
      maxEvents: options.maxEventsPerSession,
      maxBytes: options.maxReplayBytesPerSession,
      budget: replayBudget,
    });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator,
      enableJsonResponse: options.jsonResponse ?? false,
      eventStore,
      keepAliveMs: options.keepAliveMs,
      retryInterval: options.retryIntervalMs,
      maxRequestBodySize: maxBytes,
      onsessioninitialized: (id) => {
        session = {
          id,
          principalId: principal.principalId,
          expiresAtMs: principal.expiresAtMs,
          transport,
          protocolVersion,
          close: () => server.close(),
        };
        reservation.commit(session);
      },
    });
    server.onclose = () => {
      eventStore.close();
      if (session !== null) sessions.delete(session.id);
    };
    return { server, transport, session: (): McpSession | null => session };
  }

  /** A POST without a session: an `initialize` opens one; anything else the transport refuses. */
  async function open(context: RequestContext, principal: AuthenticatedPrincipal) {
    const reservation = sessions.reserve(principal.principalId);
    if (typeof reservation === "string") throw sessionRefusal(reservation);
    let built: ReturnType<typeof build> | undefined;
    try {
      const bytes = await readBody(context);
      handOff(context);
      const protocolVersion = negotiatedVersion(bytes) ?? LATEST_PROTOCOL_VERSION;
      built = build(
        principal,
        protocolVersion,
        reservation,
        () => sessionIds.mint(principal.principalId, protocolVersion),
      );
      await built.server.connect(built.transport);
      const response = await built.transport.handleRequest(withBody(context.request, bytes), {
        authInfo: callOf(context, principal),
      });
      const session = built.session();
      if (session === null) return response;
      return onBodyEnd(response, sessions.hold(session.id));
    } finally {
      if ((built?.session() ?? null) === null) {
        reservation.cancel();
        await built?.server.close();
      }
    }
  }

  // Rules 1 and 2 are the endpoint's own; 3 to 6 are the shared rules of an MCP request, in
  // their one order (`rules/order.ts`); each tool call runs the rest (`_dispatch.ts`).
  const chain = compose<RequestContext>([
    origins,
    cors,
    methods,
    ...inRuleOrder<RequestContext>({
      duplicates: duplicatesRule(),
      authenticate: authenticateRule(services.authenticator),
      correlation: whenPresent((context) => context.correlationHeader !== null, correlationRule()),
      deadline: whenPresent((context) => context.deadlineHeader !== null, deadlineRule()),
      quota: requestSlot,
    }),
    dispatch,
  ], { onError: (error, context) => errorResponse(error, context, services.logger) });

  const routes: RouteDefinition[] = ROUTED.map((method) => ({
    method,
    path: MCP_PATH,
    kind: "custom",
    handle: chain,
  }));

  return {
    routes,
    get sessionCount(): number {
      return sessions.size;
    },
    close: () => {
      openStreams.endAll();
      return sessions.close();
    },
  };
}
