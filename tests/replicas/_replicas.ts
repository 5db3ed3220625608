/**
 * Two (or more) real `serve` processes on one PostgreSQL database, with the same bootstrap
 * credential, plus the few HTTP calls the replica tests make. Replica A selects the store with
 * `--store`, the others with `AUTOMATION_RUNTIME_STORE`, so both ways are exercised.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  createTestBootstrap,
  sharedHeaders,
  startServer,
  type TestBootstrap,
  type TestServer,
} from "../support/server.ts";

/** Options of {@linkcode startReplicas}. */
export interface ReplicaOptions {
  /** How many replicas (default 2). */
  count?: number;
  /** Bootstrap shared by every replica (default: a fresh one). */
  bootstrap?: TestBootstrap;
  /** Extra environment variables of replica `index` (0 is A). */
  env?: (index: number) => Record<string, string>;
}

/**
 * One replica as the tests talk to it: its URL and an HTTP client of its own, so that no pooled
 * keep-alive connection ever outlives its server (a later server may get the same port, and a
 * reused dead connection fails with "connection reset").
 */
export interface Replica {
  /** Base URL. */
  readonly url: string;
  /** HTTP client used for every request to this replica. */
  readonly client: Deno.HttpClient;
  /** The `serve` process, when started by {@linkcode startReplicas}. */
  readonly server?: TestServer;
}

/** Replicas sharing one database and one bootstrap. */
export interface Replicas {
  /** The running replicas, A first. */
  readonly servers: readonly Replica[];
  /** The shared bootstrap bearer (admin). */
  readonly admin: string;
  /** Stops every replica. */
  stop(): Promise<void>;
  /** Same as {@linkcode Replicas.stop}. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts `count` replicas of `serve` on the PostgreSQL database at `url`, all at once.
 *
 * @example
 * ```ts ignore
 * await using replicas = await startReplicas(db.url);
 * const [a, b] = replicas.servers;
 * ```
 */
export async function startReplicas(url: string, options: ReplicaOptions = {}): Promise<Replicas> {
  const bootstrap = options.bootstrap ?? createTestBootstrap();
  const count = options.count ?? 2;
  const started = await Promise.allSettled(
    Array.from({ length: count }, (_, index) =>
      startServer(
        index === 0
          ? { bootstrap, args: ["--store", url], env: options.env?.(0) }
          : { bootstrap, env: { AUTOMATION_RUNTIME_STORE: url, ...options.env?.(index) } },
      )),
  );
  const servers = started.flatMap((result) => result.status === "fulfilled" ? [result.value] : []);
  const replicas: Replica[] = servers.map((server) => ({
    url: server.url,
    client: Deno.createHttpClient({}),
    server,
  }));
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
    for (const replica of replicas) replica.client.close();
  };
  const failure = started.find((result) => result.status === "rejected");
  if (failure !== undefined) {
    await stop();
    throw (failure as PromiseRejectedResult).reason;
  }
  for (const server of servers) {
    assert.ok(server.logs().some((line) => line.includes('"store":"postgres"')), "not on postgres");
  }
  return { servers: replicas, admin: bootstrap.token, stop, [Symbol.asyncDispose]: stop };
}

/**
 * The replicas' last stderr lines other than successful request logs, to explain a failure.
 *
 * @example
 * ```ts ignore
 * throw new Error(`stream failed\n${recentTrouble(replicas.servers)}`);
 * ```
 */
export function recentTrouble(replicas: readonly Replica[], lines = 20): string {
  return replicas.map((replica) => {
    const logs = replica.server?.logs() ?? [];
    const trouble = logs.filter((line) => !/"status":(2\d\d|503)/.test(line)).slice(-lines);
    return `--- ${replica.url}\n${trouble.join("\n")}`;
  }).join("\n");
}

/** A parsed HTTP answer. */
export interface Answer {
  /** Status code. */
  status: number;
  /** Response headers. */
  headers: Headers;
  /** Parsed JSON body, or null when empty. */
  // deno-lint-ignore no-explicit-any
  body: any;
}

async function answer(response: Response): Promise<Answer> {
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === "" ? null : JSON.parse(text),
  };
}

/** Body of an issue request. */
export interface IssueBody {
  principalId: string;
  capabilities: string[];
  expiresAt: string;
}

/**
 * A body for `POST /v1/principals`: a fresh id, `session:read`, one day.
 *
 * @example
 * ```ts ignore
 * const body = issueBody();
 * ```
 */
export function issueBody(overrides: Partial<IssueBody> = {}): IssueBody {
  return {
    principalId: crypto.randomUUID(),
    capabilities: ["session:read"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    ...overrides,
  };
}

/**
 * `POST /v1/principals` on one replica.
 *
 * @example
 * ```ts ignore
 * const issued = await issue(a, replicas.admin, issueBody());
 * ```
 */
export async function issue(
  server: Replica,
  admin: string,
  body: IssueBody,
  key: string = crypto.randomUUID(),
): Promise<Answer> {
  const response = await fetch(`${server.url}/v1/principals`, {
    client: server.client,
    method: "POST",
    headers: sharedHeaders(admin, {
      "content-type": "application/json",
      "idempotency-key": key,
    }),
    body: JSON.stringify(body),
  });
  return await answer(response);
}

/**
 * `GET /v1/runtime` with a bearer: what a principal does with its credential.
 *
 * @example
 * ```ts ignore
 * assert.equal((await use(b, bearer)).status, 200);
 * ```
 */
export async function use(server: Replica, bearer: string): Promise<Answer> {
  return await answer(
    await fetch(`${server.url}/v1/runtime`, {
      client: server.client,
      headers: sharedHeaders(bearer),
    }),
  );
}

/**
 * `DELETE /v1/principals/{id}` on one replica.
 *
 * @example
 * ```ts ignore
 * assert.equal((await revoke(a, replicas.admin, id)).status, 204);
 * ```
 */
export async function revoke(
  server: Replica,
  admin: string,
  principalId: string,
): Promise<Answer> {
  const response = await fetch(`${server.url}/v1/principals/${principalId}`, {
    client: server.client,
    method: "DELETE",
    headers: sharedHeaders(admin),
  });
  return await answer(response);
}

/**
 * `GET /v1/principals` on one replica (`query`, such as `?limit=500`, with its `?`).
 *
 * @example
 * ```ts ignore
 * const listed = await list(b, replicas.admin);
 * ```
 */
export async function list(server: Replica, admin: string, query = ""): Promise<Answer> {
  return await answer(
    await fetch(`${server.url}/v1/principals${query}`, {
      client: server.client,
      headers: sharedHeaders(admin),
    }),
  );
}

/**
 * Every principal `GET /v1/principals` lists on one replica, following `nextCursor` page by page.
 *
 * @example
 * ```ts ignore
 * const ids = new Set((await listAll(b, replicas.admin)).map((p) => p.principalId));
 * ```
 */
export async function listAll(
  server: Replica,
  admin: string,
): Promise<{ principalId: string; revokedAt?: string }[]> {
  const principals: { principalId: string; revokedAt?: string }[] = [];
  let query = "?limit=500";
  for (;;) {
    const page = await list(server, admin, query);
    assert.equal(page.status, 200, JSON.stringify(page.body));
    principals.push(...page.body.principals);
    if (page.body.nextCursor === null) return principals;
    query = `?limit=500&cursor=${page.body.nextCursor}`;
  }
}

/**
 * Asserts that no log line of the replicas holds `secret`.
 *
 * @example
 * ```ts ignore
 * assertNotLogged(replicas.servers, "hunter2");
 * ```
 */
export function assertNotLogged(replicas: readonly Replica[], secret: string): void {
  for (const replica of replicas) {
    const server = replica.server;
    if (server === undefined) continue;
    for (const line of [...server.logs(), ...server.stdout()]) {
      assert.ok(!line.includes(secret), `a log line holds a secret: ${line.slice(0, 120)}`);
    }
  }
}
