/**
 * The gateway test harness: the in-process fake provider (which checks the provider key and the
 * managed-agents beta header on every call), two agents and an environment in it, and an
 * in-process runtime server whose run gateway talks to the fake. Log lines and events are
 * captured, so tests can look for the provider key in them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ProviderManagedAgentClient } from "../../client/mod.ts";
import {
  type BootstrapCredential,
  deriveBootstrapCredential,
} from "../../server/bootstrap/credential.ts";
import type { RuntimeLogger } from "../../server/log.ts";
import type { RuntimeMetrics } from "../../server/metrics.ts";
import type { ProviderSettings } from "../../server/runs/provider.ts";
import {
  createRuntimeServer,
  type RuntimeServer,
  type RuntimeServerOptions,
} from "../../server/server.ts";
import { openKvStore } from "../../server/store/kv/mod.ts";
import { type RuntimeTestHooks, withTestHooks } from "../../server/test_hooks.ts";
import type { Capability, Store } from "../../server/store/types.ts";
import type { PrincipalPolicy } from "../../wire/mod.ts";
import { FakeProvider } from "../support/fake_provider.ts";
import { assertKeepsContract } from "../support/contract.ts";
import { sharedHeaders } from "../support/server.ts";

const DAY = 86_400_000;

// deno-lint-ignore no-explicit-any
type Json = any;

/** One answered request. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: Json;
}

/** Options of {@linkcode startGateway}. */
export interface GatewayOptions {
  /** Leave the provider credential out (runs disabled). */
  noCredential?: boolean;
  /** Provider base URL override (for example an unreachable one). */
  baseUrl?: string;
  /** Default environment (default: the fake's environment). */
  defaultEnvironment?: string | null;
  /** Service-wide active-run limit. */
  maxActiveRuns?: number;
  /** Store to use instead of a fresh in-memory KV store (its namespace must be the bootstrap's). */
  store?: (namespace: string) => Promise<Store>;
  /**
   * Another replica of this gateway: its fake provider, agents and bootstrap are shared (pass
   * `store` to share the store too); closing this one leaves the fake running.
   */
  replicaOf?: Gateway;
  /** Pending tool-request timeout of the runtime, in ms. */
  pendingTimeoutMs?: number;
  /** Webhook signing secrets (enables `POST /webhooks/provider`). */
  webhookSecrets?: string[];
  /** Tool-answer test hooks of the runtime. */
  answerTestHooks?: RuntimeTestHooks;
  /** Metrics the server keeps. */
  metrics?: RuntimeMetrics;
  /** Further server options (event stream limits, lease timings). */
  serverOptions?: Partial<RuntimeServerOptions>;
}

/** A running gateway with its fake provider. */
export interface Gateway {
  fake: FakeProvider;
  server: RuntimeServer;
  store: Store;
  /** The provider key (random per harness, so a leak is found by search). */
  providerKey: string;
  /** The bootstrap bearer (admin). */
  admin: string;
  adminId: string;
  agentId: string;
  otherAgentId: string;
  environmentId: string;
  /** The bootstrap credential (shared by replicas). */
  bootstrap: BootstrapCredential;
  /** Every log line and logged event, as JSON text (events with their `level`). */
  logs: string[];
  /** Every answer so far (for leak checks). */
  answers: Answer[];
  request(
    method: string,
    path: string,
    options?: {
      bearer?: string | null;
      body?: unknown;
      headers?: Record<string, string | null>;
      key?: string;
    },
  ): Promise<Answer>;
  /** Issues a principal; returns its bearer and id. */
  issue(
    capabilities: Capability[],
    policy?: PrincipalPolicy,
  ): Promise<{ bearer: string; principalId: string }>;
  /** Makes the fake's turns last (runs stay `running`) or end at once (the default echo). */
  holdTurns(hold: boolean): void;
  close(): Promise<void>;
}

/** Starts a fake provider and a gateway in front of it. */
export async function startGateway(options: GatewayOptions = {}): Promise<Gateway> {
  const primary = options.replicaOf;
  const providerKey = primary?.providerKey ?? `sk-fake-${crypto.randomUUID().replaceAll("-", "")}`;
  const fake = primary?.fake ?? await FakeProvider.start({ apiKey: providerKey });
  const setup = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey: providerKey });
  const agent = primary ? { id: primary.agentId } : await setup.createAgent({
    name: "worker",
    model: "model-small",
  });
  const other = primary
    ? { id: primary.otherAgentId }
    : await setup.createAgent({ name: "other", model: "model-small" });
  const environment = primary
    ? { id: primary.environmentId }
    : await setup.createEnvironment({ name: "env" });
  const defaultScript = fake.managedAgents!.script;

  const admin = primary?.admin ?? `art_${crypto.randomUUID().replaceAll("-", "")}${"A".repeat(11)}`;
  const adminId = primary?.adminId ?? crypto.randomUUID();
  const bootstrap = primary?.bootstrap ?? deriveBootstrapCredential({
    token: admin,
    principalId: adminId,
    capabilities: ["session:read", "session:write", "session:approve", "authority:admin"],
    expiresAt: new Date(Date.now() + 30 * DAY).toISOString(),
    source: "environment",
  });
  const store = options.store
    ? await options.store(bootstrap.namespace)
    : await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  const logs: string[] = [];
  const logger: RuntimeLogger = {
    request: (record) => logs.push(JSON.stringify(record)),
    info: (message, fields) => logs.push(JSON.stringify({ level: "info", message, ...fields })),
    error: (message, fields) => logs.push(JSON.stringify({ level: "error", message, ...fields })),
    flush: () => {},
  };
  const provider: ProviderSettings = options.noCredential ? {} : {
    apiKey: providerKey,
    baseUrl: options.baseUrl ?? fake.baseUrl,
    defaultAgentId: agent.id as string,
    ...(options.defaultEnvironment === null
      ? {}
      : { defaultEnvironmentId: options.defaultEnvironment ?? (environment.id as string) }),
    ...(options.webhookSecrets !== undefined ? { webhookSecrets: options.webhookSecrets } : {}),
  };
  const server = createRuntimeServer(withTestHooks({
    bootstrap,
    store,
    logger,
    provider,
    maxActiveRuns: options.maxActiveRuns,
    pendingTimeoutMs: options.pendingTimeoutMs,
    cleanupIntervalMs: 0,
    metrics: options.metrics,
    ...options.serverOptions,
  }, options.answerTestHooks ?? {}));
  const answers: Answer[] = [];

  async function request(
    method: string,
    path: string,
    requestOptions: {
      bearer?: string | null;
      body?: unknown;
      headers?: Record<string, string | null>;
      key?: string;
    } = {},
  ): Promise<Answer> {
    const overrides: Record<string, string | null> = { ...requestOptions.headers };
    if (method === "POST" && !("idempotency-key" in overrides)) {
      overrides["idempotency-key"] = requestOptions.key ?? crypto.randomUUID();
    }
    let body: string | undefined;
    if (requestOptions.body !== undefined) {
      body = typeof requestOptions.body === "string"
        ? requestOptions.body
        : JSON.stringify(requestOptions.body);
      if (!("content-type" in overrides)) overrides["content-type"] = "application/json";
    }
    const headers = sharedHeaders(
      requestOptions.bearer === undefined ? admin : requestOptions.bearer,
      overrides,
    );
    const response = await server.handler(
      new Request(`http://127.0.0.1${path}`, { method, headers, body }),
    );
    const text = await response.text();
    let json: Json;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const answer = { status: response.status, headers: response.headers, text, json };
    await assertKeepsContract(method, path, answer, server.routes);
    answers.push(answer);
    return answer;
  }

  return {
    fake,
    server,
    store,
    providerKey,
    admin,
    adminId,
    agentId: agent.id as string,
    otherAgentId: other.id as string,
    environmentId: environment.id as string,
    bootstrap,
    logs,
    answers,
    request,
    async issue(capabilities, policy = {}) {
      const principalId = crypto.randomUUID();
      const answer = await request("POST", "/v1/principals", {
        body: {
          principalId,
          capabilities,
          expiresAt: new Date(Date.now() + DAY).toISOString(),
          ...policy,
        },
      });
      assert.equal(answer.status, 201, answer.text);
      return { bearer: answer.json.bearer, principalId };
    },
    holdTurns(hold) {
      fake.managedAgents!.script = hold ? () => [{ delayMs: 600_000 }] : defaultScript;
    },
    async close() {
      await server.close();
      await store.close();
      if (primary === undefined) await fake.close();
    },
  };
}

/** Asserts an error answer's status and code. */
export function assertCode(answer: Answer, status: number, code: string): void {
  assert.equal(answer.status, status, answer.text);
  assert.equal(answer.headers.get("content-type"), "application/json");
  assert.equal(answer.json?.error?.code, code, answer.text);
}

/** `check`'s first value that is not undefined, asked every 25 ms for up to `ms`. */
export async function waitFor<T>(
  check: () => T | undefined | Promise<T | undefined>,
  ms = 10_000,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
