/**
 * An in-test stand-in for the runtime service's runs gateway (`Deno.serve` on 127.0.0.1:0): the
 * routes `POST/GET /v1/runs`, `POST /v1/principals` (echoes the body with a bearer), `GET /v1/runs/{runId}`, `POST /v1/runs/{runId}/cancel`,
 * `POST /v1/runs/{runId}/messages` and `GET /v1/audit`, under the shared request rules (route,
 * bearer, interface version, correlation id, deadline, capability, idempotency key, content
 * type, JSON), with idempotent replay, per-principal agent lists and run quotas, and the error
 * body of the service. Every request is recorded, so tests can assert what a client sent.
 * `faults` answers the next requests with a given response instead, for the provider errors.
 *
 * @module
 */

/** The interface version of the service. */
export const INTERFACE_VERSION = "2026-07-23";

/** One principal the fake knows. */
export interface FakePrincipal {
  principalId: string;
  token: string;
  capabilities: string[];
  agentIds?: string[];
  maxActiveRuns: number;
}

/** A recorded request. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: string;
}

/** A canned answer for the next request. */
export interface Fault {
  status: number;
  code: string;
  headers?: Record<string, string>;
  extra?: Record<string, unknown>;
}

type Json = Record<string, unknown>;

interface StoredRun extends Json {
  runId: string;
  principalId: string;
  state: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ACTIVE = new Set(["queued", "running", "requires_action"]);
const STATES = new Set([...ACTIVE, "completed", "failed", "cancelled"]);
const METADATA_KEYS = new Set([
  "agent_id",
  "environment_id",
  "agent_version",
  "resources",
  "vault_ids",
]);

function token(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return "art_" + btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");
}

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Json = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The fake gateway. Close it with {@linkcode FakeGateway.close}. */
export class FakeGateway {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Every principal; `admin` holds every capability. */
  readonly admin: FakePrincipal = {
    principalId: crypto.randomUUID(),
    token: token(),
    capabilities: ["session:read", "session:write", "session:approve", "authority:admin"],
    maxActiveRuns: 8,
  };
  /** `session:read` and `session:write`, limited to `agent_ok`, at most 2 active runs. */
  readonly writer: FakePrincipal = {
    principalId: crypto.randomUUID(),
    token: token(),
    capabilities: ["session:read", "session:write"],
    agentIds: ["agent_ok"],
    maxActiveRuns: 2,
  };
  /** `session:read` only. */
  readonly reader: FakePrincipal = {
    principalId: crypto.randomUUID(),
    token: token(),
    capabilities: ["session:read"],
    maxActiveRuns: 8,
  };
  /** Every request, in order. */
  readonly requests: RecordedRequest[] = [];
  /** Runs by id, in creation order. */
  readonly runs: Map<string, StoredRun> = new Map();
  /** Audit entries, oldest first. */
  readonly audit: Json[] = [];
  /** Answers for the next requests, in order, before any route runs. */
  readonly faults: Fault[] = [];
  /** False: every run route answers 503 `providerNotConfigured`. */
  providerConfigured = true;

  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #replays = new Map<string, { body: string; status: number; answer: Json }>();
  #runCounter = 0;

  private constructor() {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request) => this.#handle(request),
    );
    this.url = `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** Starts the fake on a random loopback port. */
  static start(): FakeGateway {
    return new FakeGateway();
  }

  /** The requests to a path (query excluded), in order. */
  requestsTo(method: string, path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && r.path === path);
  }

  /** Stops the server. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }

  async #handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const body = await request.text();
    this.requests.push({
      method: request.method,
      path: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      body,
    });
    const echo = new Headers({ "x-content-type-options": "nosniff" });
    for (const name of ["x-interface-version", "x-correlation-id"]) {
      const value = request.headers.get(name);
      if (value !== null) echo.set(name, value);
    }
    const correlationId = request.headers.get("x-correlation-id") ?? crypto.randomUUID();
    try {
      const fault = this.faults.shift();
      if (fault !== undefined) {
        throw new Refusal(
          fault.status,
          fault.code,
          `fault ${fault.code}`,
          fault.extra,
          fault.headers,
        );
      }
      const { status, answer, replayed } = this.#route(request, url, body);
      if (replayed) echo.set("idempotent-replayed", "true");
      echo.set("content-type", "application/json");
      return new Response(JSON.stringify(answer), { status, headers: echo });
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      for (const [name, value] of Object.entries(error.headers)) echo.set(name, value);
      echo.set("content-type", "application/json");
      return new Response(
        JSON.stringify({
          error: {
            code: error.code,
            layer: layerOf(error.code),
            message: error.message,
            correlationId,
            ...error.extra,
          },
        }),
        { status: error.status, headers: echo },
      );
    }
  }

  #route(
    request: Request,
    url: URL,
    body: string,
  ): { status: number; answer: Json; replayed?: boolean } {
    const path = url.pathname;
    const segments = path.split("/").filter((s) => s !== "");
    let route: { method: string; capability: string; json: boolean; run?: string; name: string };
    if (path === "/v1/runs") {
      route = request.method === "POST"
        ? { method: "POST", capability: "session:write", json: true, name: "start" }
        : { method: "GET", capability: "session:read", json: false, name: "list" };
    } else if (path === "/v1/principals") {
      route = { method: "POST", capability: "authority:admin", json: true, name: "principal" };
    } else if (path === "/v1/audit") {
      route = { method: "GET", capability: "authority:admin", json: false, name: "audit" };
    } else if (segments.length === 3 && segments[0] === "v1" && segments[1] === "runs") {
      route = { method: "GET", capability: "session:read", json: false, name: "get" };
    } else if (
      segments.length === 4 && segments[0] === "v1" && segments[1] === "runs" &&
      (segments[3] === "cancel" || segments[3] === "messages")
    ) {
      route = {
        method: "POST",
        capability: "session:write",
        json: segments[3] === "messages",
        name: segments[3],
      };
    } else {
      throw new Refusal(404, "notFound", "No such route");
    }
    route.run = segments[2] === undefined ? undefined : decodeURIComponent(segments[2]);
    if (request.method !== route.method) {
      throw new Refusal(405, "methodNotAllowed", "Method not allowed", {}, {
        allow: route.method,
      });
    }
    const principal = this.#authenticate(request);
    checkSharedHeaders(request);
    if (!principal.capabilities.includes(route.capability)) {
      throw new Refusal(403, "missingCapability", "Capability missing", {
        requiredCapability: route.capability,
      });
    }
    let key: string | null = null;
    if (route.method === "POST") {
      key = request.headers.get("idempotency-key");
      if (key === null) throw new Refusal(400, "missingHeader", "idempotency-key is required");
      if (!/^[\x20-\x7e]{1,128}$/.test(key)) {
        throw new Refusal(400, "invalidHeader", "idempotency-key is invalid");
      }
      const replay = this.#replays.get(`${principal.principalId} POST ${path} ${key}`);
      if (replay !== undefined) {
        if (replay.body !== body) {
          throw new Refusal(422, "idempotencyConflict", "Key reused with another body");
        }
        return { status: replay.status, answer: replay.answer, replayed: true };
      }
    }
    let parsed: unknown = undefined;
    if (route.json) {
      if (!(request.headers.get("content-type") ?? "").startsWith("application/json")) {
        throw new Refusal(415, "unsupportedMediaType", "JSON expected");
      }
      try {
        parsed = JSON.parse(body);
      } catch {
        throw new Refusal(400, "invalidJson", "Body is not JSON");
      }
    } else if (body !== "") {
      throw new Refusal(400, "invalidRequest", "No body expected");
    }
    const store = (status: number, answer: Json) => {
      if (key !== null) {
        this.#replays.set(`${principal.principalId} POST ${path} ${key}`, { body, status, answer });
      }
      return { status, answer };
    };
    try {
      switch (route.name) {
        case "start":
          return store(201, this.#start(principal, parsed, request));
        case "list":
          return { status: 200, answer: this.#list(principal, url.searchParams) };
        case "get":
          return { status: 200, answer: this.#visibleRun(principal, route.run!) };
        case "cancel":
          return store(202, this.#cancel(principal, route.run!, request));
        case "messages":
          return store(202, this.#message(principal, route.run!, parsed, request));
        case "principal":
          return store(201, { ...(parsed as Json), bearer: token() });
        default:
          return { status: 200, answer: this.#audit(url.searchParams) };
      }
    } catch (error) {
      if (error instanceof Refusal && error.status < 500 && key !== null) {
        store(error.status, {
          error: { code: error.code, layer: layerOf(error.code), message: error.message },
        });
      }
      throw error;
    }
  }

  #authenticate(request: Request): FakePrincipal {
    const header = request.headers.get("authorization") ?? "";
    const match = /^Bearer (\S+)$/.exec(header);
    const principal = [this.admin, this.writer, this.reader].find((p) => p.token === match?.[1]);
    if (principal === undefined) {
      throw new Refusal(401, "authenticationFailed", "Authentication failed", {}, {
        "www-authenticate": "Bearer",
      });
    }
    return principal;
  }

  #requireProvider(): void {
    if (!this.providerConfigured) {
      throw new Refusal(503, "providerNotConfigured", "The service has no provider credential");
    }
  }

  #start(principal: FakePrincipal, body: unknown, request: Request): Json {
    this.#requireProvider();
    if (!isObject(body)) throw new Refusal(422, "invalidRequest", "Body must be an object");
    checkInput(body.input);
    for (const name of Object.keys(body)) {
      if (!["input", "title", "metadata"].includes(name)) {
        throw new Refusal(422, "invalidRequest", `Unknown field ${name}`);
      }
    }
    if (body.title !== undefined && typeof body.title !== "string") {
      throw new Refusal(422, "invalidRequest", "title must be a string");
    }
    const metadata = body.metadata ?? {};
    if (!isObject(metadata)) throw new Refusal(422, "invalidRequest", "metadata must be an object");
    for (const name of Object.keys(metadata)) {
      if (!METADATA_KEYS.has(name)) {
        throw new Refusal(422, "invalidRequest", `Unknown metadata ${name}`);
      }
    }
    const agentId = typeof metadata.agent_id === "string" ? metadata.agent_id : "agent_default";
    const environmentId = typeof metadata.environment_id === "string"
      ? metadata.environment_id
      : "env_default";
    if (principal.agentIds !== undefined && !principal.agentIds.includes(agentId)) {
      throw new Refusal(403, "agentNotAllowed", `Agent ${agentId} is not allowed`);
    }
    const active =
      [...this.runs.values()].filter((run) =>
        run.principalId === principal.principalId && ACTIVE.has(run.state)
      ).length;
    if (active >= principal.maxActiveRuns) {
      throw new Refusal(429, "runQuotaExceeded", "Too many active runs", {}, {
        "retry-after": "30",
      });
    }
    const now = new Date().toISOString();
    const run: StoredRun = {
      runId: `sesn_${String(++this.#runCounter).padStart(4, "0")}`,
      principalId: principal.principalId,
      agentId,
      environmentId,
      state: "running",
      lastEventSeq: 1,
      createdAt: now,
      updatedAt: now,
    };
    if (typeof metadata.agent_version === "number") run.agentVersion = metadata.agent_version;
    if (typeof body.title === "string") run.title = body.title;
    this.runs.set(run.runId, run);
    this.#record("run.started", principal, run.runId, request);
    return { ...run };
  }

  #visibleRun(principal: FakePrincipal, runId: string): StoredRun {
    this.#requireProvider();
    const run = this.runs.get(runId);
    const seesAll = principal.capabilities.includes("authority:admin") ||
      principal.capabilities.includes("session:approve");
    if (run === undefined || (run.principalId !== principal.principalId && !seesAll)) {
      throw new Refusal(404, "runNotFound", "No such run");
    }
    return run;
  }

  #ownRun(principal: FakePrincipal, runId: string): StoredRun {
    const run = this.#visibleRun(principal, runId);
    if (
      run.principalId !== principal.principalId &&
      !principal.capabilities.includes("authority:admin")
    ) {
      throw new Refusal(404, "runNotFound", "No such run");
    }
    return run;
  }

  #cancel(principal: FakePrincipal, runId: string, request: Request): Json {
    const run = this.#ownRun(principal, runId);
    const now = new Date().toISOString();
    run.state = "cancelled";
    run.updatedAt = now;
    run.endedAt = now;
    this.#record("run.cancelled", principal, run.runId, request);
    return { ...run };
  }

  #message(principal: FakePrincipal, runId: string, body: unknown, request: Request): Json {
    const run = this.#ownRun(principal, runId);
    if (!isObject(body)) throw new Refusal(422, "invalidRequest", "Body must be an object");
    checkInput(body.input);
    if (Object.keys(body).some((name) => name !== "input")) {
      throw new Refusal(422, "invalidRequest", "Only input is allowed");
    }
    run.state = "running";
    run.updatedAt = new Date().toISOString();
    delete run.endedAt;
    this.#record("run.message", principal, run.runId, request);
    return { ...run };
  }

  #list(principal: FakePrincipal, query: URLSearchParams): Json {
    this.#requireProvider();
    const limit = limitOf(query);
    const state = query.get("state");
    if (state !== null && !STATES.has(state)) throw new Refusal(422, "invalidRequest", "state");
    const filterPrincipal = query.get("principalId");
    const seesAll = principal.capabilities.includes("authority:admin") ||
      principal.capabilities.includes("session:approve");
    if (filterPrincipal !== null && !seesAll) {
      throw new Refusal(403, "missingCapability", "principalId needs authority:admin");
    }
    let runs = [...this.runs.values()].reverse();
    if (!seesAll) runs = runs.filter((run) => run.principalId === principal.principalId);
    if (filterPrincipal !== null) runs = runs.filter((r) => r.principalId === filterPrincipal);
    if (state !== null) runs = runs.filter((run) => run.state === state);
    const page = paginate(runs, limit, query.get("cursor"));
    return { runs: page.items.map((run) => ({ ...run })), nextCursor: page.nextCursor };
  }

  #audit(query: URLSearchParams): Json {
    const limit = limitOf(query);
    const principalId = query.get("principalId");
    const action = query.get("action");
    let entries = [...this.audit].reverse();
    if (principalId !== null) {
      entries = entries.filter((e) => e.actorId === principalId || e.subjectId === principalId);
    }
    if (action !== null) entries = entries.filter((e) => e.action === action);
    const page = paginate(entries, limit, query.get("cursor"));
    return { entries: page.items, nextCursor: page.nextCursor };
  }

  #record(action: string, principal: FakePrincipal, runId: string, request: Request): void {
    this.audit.push({
      seq: this.audit.length + 1,
      at: new Date().toISOString(),
      action,
      actorId: principal.principalId,
      runId,
      correlationId: request.headers.get("x-correlation-id"),
      outcome: "success",
    });
  }
}

function checkSharedHeaders(request: Request): void {
  const version = request.headers.get("x-interface-version");
  if (version === null) throw new Refusal(400, "missingHeader", "x-interface-version");
  if (version !== INTERFACE_VERSION) {
    throw new Refusal(422, "unsupportedInterfaceVersion", "version", {
      supportedVersions: [INTERFACE_VERSION],
    });
  }
  const correlation = request.headers.get("x-correlation-id");
  if (correlation === null) throw new Refusal(400, "missingHeader", "x-correlation-id");
  if (!UUID.test(correlation)) throw new Refusal(400, "invalidHeader", "x-correlation-id");
  const deadline = request.headers.get("x-deadline");
  if (deadline === null) throw new Refusal(400, "missingHeader", "x-deadline");
  const at = Date.parse(deadline);
  if (Number.isNaN(at) || at > Date.now() + 300_000) {
    throw new Refusal(400, "invalidHeader", "x-deadline");
  }
  if (at <= Date.now()) throw new Refusal(408, "deadlineExceeded", "deadline passed");
}

function checkInput(input: unknown): void {
  const ok = (typeof input === "string" && input !== "") ||
    (Array.isArray(input) && input.length > 0 && input.every(isObject));
  if (!ok) throw new Refusal(422, "invalidRequest", "input must be text or messages");
}

function limitOf(query: URLSearchParams): number {
  const text = query.get("limit");
  if (text === null) return 20;
  const limit = Number(text);
  if (!/^\d+$/.test(text) || limit < 1 || limit > 100) {
    throw new Refusal(422, "invalidRequest", "limit must be 1 to 100");
  }
  return limit;
}

function paginate<T>(
  items: T[],
  limit: number,
  cursor: string | null,
): { items: T[]; nextCursor: string | null } {
  let offset = 0;
  if (cursor !== null) {
    const match = /^o(\d+)$/.exec(cursor);
    if (match === null) throw new Refusal(422, "invalidRequest", "cursor");
    offset = Number(match[1]);
  }
  const page = items.slice(offset, offset + limit);
  const next = offset + limit < items.length ? `o${offset + limit}` : null;
  return { items: page, nextCursor: next };
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function layerOf(code: string): string {
  if (code === "authenticationFailed") return "auth";
  if (code === "missingCapability") return "auth";
  if (code.startsWith("idempotency")) return "idempotency";
  if (code.startsWith("provider")) return "internal";
  if (code === "agentNotAllowed" || code === "runQuotaExceeded") return "authority";
  return "interface";
}
