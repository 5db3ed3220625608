/**
 * The set-up of the token exchange tests: a runtime server in process (Deno KV in memory, its log
 * captured) whose clock is a test clock shared with a local OIDC issuer on loopback, loopback
 * issuers allowed; and the calls the tests make through its HTTP handler, every answer kept so a
 * test can scan them all.
 *
 * @module
 */
import assert from "node:assert/strict";
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import { createJsonLogger } from "../../server/log.ts";
import type { TokenExchangeOptions } from "../../server/oidc/exchange.ts";
import { createRuntimeServer, type RuntimeServer } from "../../server/server.ts";
import { openKvStore, type Store } from "../../server/store/mod.ts";
import { AUDIENCE, LocalOidcIssuer } from "../support/oidc_issuer.ts";
import { TEST_INTERFACE_VERSION } from "../support/server.ts";
import { type TestClock, testClock } from "./_setup.ts";

/** A parsed answer, with its raw text. */
export interface Answer {
  /** Status code. */
  status: number;
  /** Headers. */
  headers: Headers;
  /** Parsed JSON body, or null when empty. */
  // deno-lint-ignore no-explicit-any
  body: any;
  /** The body as received. */
  text: string;
}

/** Options of {@linkcode startExchange}. */
export interface ExchangeSetupOptions {
  /** The server's token exchange options (loopback issuers are allowed unless said otherwise). */
  tokenExchange?: TokenExchangeOptions;
  /** The bootstrap's lifetime from the test clock's start, in ms (default 30 days). */
  bootstrapTtlMs?: number;
  /** In-flight requests per principal (and for every anonymous request together). */
  inFlightQuota?: number;
  /** Run on the wall clock (for clients that send deadlines of their own); it cannot advance. */
  wallClock?: boolean;
}

/** A server, an issuer and a clock. */
export interface ExchangeSetup {
  /** The clock of the server and the issuer. */
  time: TestClock;
  /** The issuer (its name is its loopback URL). */
  issuer: LocalOidcIssuer;
  /** The server. */
  server: RuntimeServer;
  /** Its store. */
  store: Store;
  /** The bootstrap bearer (the admin). */
  admin: string;
  /** The bootstrap principal's id. */
  adminId: string;
  /** Every log line so far (flushed). */
  logs(): string[];
  /** Every answer so far. */
  answers: Answer[];
  /** One request through the server's handler. */
  call(method: string, path: string, options?: CallOptions): Promise<Answer>;
  /** Creates a policy trusting the issuer (`overrides` replace fields of the body). */
  createPolicy(overrides?: Record<string, unknown>): Promise<Answer>;
  /** Exchanges `token` under `policy` (a fresh idempotency key unless given). */
  exchange(token: string, policy: string, key?: string): Promise<Answer>;
  /** A fetch that answers through the server's handler (for the SDK). */
  fetch: typeof fetch;
  /** Stops the server, the store and the issuer. */
  close(): Promise<void>;
}

/** Options of one call. */
export interface CallOptions {
  /** The bearer (default none). */
  bearer?: string;
  /** A JSON body. */
  body?: unknown;
  /** The idempotency key (default: a fresh one on POST). */
  key?: string;
  /** Headers to set or (null) drop. */
  headers?: Record<string, string | null>;
}

/** The body of a policy trusting `issuer`: `octo-org/octo-repo` on any branch, read only. */
export function policyBody(issuer: string, overrides: Record<string, unknown> = {}) {
  return {
    name: "octo-repo",
    issuer,
    audience: AUDIENCE,
    claims: { repository: "octo-org/octo-repo", ref: "refs/heads/*" },
    capabilities: ["session:read"],
    agentIds: ["agent_1"],
    vaultIds: ["vault_ci"],
    maxActiveRuns: 2,
    ttlSeconds: 900,
    ...overrides,
  };
}

/** The body of an exchange. */
export function exchangeBody(token: string, policy: string) {
  return {
    grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
    subject_token: token,
    subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
    policy,
  };
}

/** Starts the server and the issuer on one test clock. */
export async function startExchange(options: ExchangeSetupOptions = {}): Promise<ExchangeSetup> {
  const time: TestClock = options.wallClock
    ? {
      now: Date.now,
      advance() {
        throw new Error("The wall clock does not advance");
      },
    }
    : testClock();
  const issuer = await LocalOidcIssuer.start({ now: time.now });
  const admin = "art_" + crypto.randomUUID().replaceAll("-", "").repeat(2);
  const bootstrap = deriveBootstrapCredential({
    token: admin,
    principalId: crypto.randomUUID(),
    capabilities: ["authority:admin", "session:read", "session:write"],
    expiresAt: new Date(time.now() + (options.bootstrapTtlMs ?? 30 * 86_400_000)).toISOString(),
    source: "environment",
  });
  const store = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  const lines: string[] = [];
  const logger = createJsonLogger({ write: (text) => lines.push(text), batchMs: 0 });
  const server = createRuntimeServer({
    bootstrap,
    store,
    logger,
    now: time.now,
    inFlightQuota: options.inFlightQuota,
    tokenExchange: { allowLoopbackHttp: true, ...options.tokenExchange },
  });
  const answers: Answer[] = [];

  async function call(method: string, path: string, call: CallOptions = {}): Promise<Answer> {
    const headers = new Headers({
      "x-interface-version": TEST_INTERFACE_VERSION,
      "x-correlation-id": crypto.randomUUID(),
      "x-deadline": new Date(time.now() + 30_000).toISOString(),
    });
    if (call.bearer !== undefined) headers.set("authorization", `Bearer ${call.bearer}`);
    if (method === "POST") headers.set("idempotency-key", call.key ?? crypto.randomUUID());
    if (call.body !== undefined) headers.set("content-type", "application/json");
    for (const [name, value] of Object.entries(call.headers ?? {})) {
      if (value === null) headers.delete(name);
      else headers.set(name, value);
    }
    const response = await server.handler(
      new Request(`http://localhost${path}`, {
        method,
        headers,
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
      }),
    );
    const text = await response.text();
    const answer = {
      status: response.status,
      headers: response.headers,
      body: text === "" ? null : JSON.parse(text),
      text,
    };
    answers.push(answer);
    return answer;
  }

  return {
    time,
    issuer,
    server,
    store,
    admin,
    adminId: bootstrap.principalId,
    answers,
    logs() {
      logger.flush();
      return lines.flatMap((text) => text.split("\n")).filter((line) => line !== "");
    },
    call,
    createPolicy: (overrides = {}) =>
      call("POST", "/v1/trust-policies", {
        bearer: admin,
        body: policyBody(issuer.issuer, overrides),
      }),
    fetch: (input, init) => server.handler(new Request(input, init)),
    exchange: (token, policy, key) =>
      call("POST", "/v1/token-exchange", { body: exchangeBody(token, policy), key }),
    async close() {
      await server.close();
      await store.close();
      await issuer.close();
    },
  };
}

/**
 * Asserts that no part of `token` long enough to tell (its segments, each signature and payload
 * included) appears in `texts`.
 */
export function assertTokenAbsent(token: string, texts: readonly string[], where: string): void {
  const parts = [token, ...token.split(".").filter((part) => part.length >= 16)];
  for (const text of texts) {
    for (const part of parts) {
      assert.ok(!text.includes(part), `${where} holds a part of the ID token: ${text}`);
    }
  }
}

/** Asserts a refused exchange: 401 `authenticationFailed` with `reason`. */
export function assertRefusedExchange(answer: Answer, reason: string): void {
  assert.equal(answer.status, 401, answer.text);
  assert.equal(answer.body.error.code, "authenticationFailed");
  assert.equal(answer.body.error.layer, "auth");
  assert.equal(answer.body.error.details.reason, reason, answer.text);
  assert.ok(answer.headers.get("www-authenticate")?.startsWith("Bearer"));
}
