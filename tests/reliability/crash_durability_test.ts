/**
 * Crash durability: the real `serve` is killed with SIGKILL at a random moment of a loop of
 * issuances and revocations, 50 times, on Deno KV and on PostgreSQL. After each restart every
 * acknowledged principal works, every acknowledged revocation holds, and the store is consistent:
 * the list of principals holds every acknowledged one and nothing that was never asked for,
 * revocations show in it, and what the list says agrees with what authentication does. Requests
 * cut by the kill are retried with their idempotency key once their claim's lease has passed:
 * each ends as exactly one principal, answered with the same bearer on every replay.
 */
import assert from "node:assert/strict";
import { createTestBootstrap, sharedHeaders, type TestBootstrap } from "../support/server.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { launch, type Launched } from "./_serve.ts";

const CRASHES = Number(Deno.env.get("AUTOMATION_RUNTIME_CRASHES") ?? 50);
const WORKERS = 6;
/** Requests carry a 3 s deadline, so a claim cut by the kill is free again 8 s later. */
const DEADLINE_MS = 3_000;
const LEASE_PASSED_MS = DEADLINE_MS + 5_000 + 1_000;

interface Issued {
  principalId: string;
  idempotencyKey: string;
  body: string;
  capabilities: string[];
  expiresAt: string;
  /** The acknowledged 201 body, once there is one. */
  response?: { bearer: string; text: string };
  sentAt: number;
}

interface World {
  issued: Map<string, Issued>;
  /** Principals whose 201 arrived. */
  acknowledged: Set<string>;
  /** Issuances cut by a kill: their fate is settled by a retry after the lease. */
  uncertain: Set<string>;
  /** Revocations answered 204. */
  revoked: Set<string>;
  /** Revocations cut by a kill. */
  maybeRevoked: Set<string>;
  /** Principals acknowledged or revoked since the last restart (checked in full). */
  recent: Set<string>;
}

function headers(bearer: string, extra: Record<string, string> = {}): Headers {
  return sharedHeaders(bearer, {
    "x-deadline": new Date(Date.now() + DEADLINE_MS).toISOString(),
    ...extra,
  });
}

function newIssuance(): Issued {
  const principalId = crypto.randomUUID();
  const capabilities = Math.random() < 0.5 ? ["session:read"] : ["session:read", "session:write"];
  const expiresAt = new Date(Date.now() + 7 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, "Z");
  return {
    principalId,
    idempotencyKey: crypto.randomUUID(),
    body: JSON.stringify({ principalId, capabilities, expiresAt }),
    capabilities,
    expiresAt,
    sentAt: Date.now(),
  };
}

async function postIssuance(
  server: Launched,
  client: Deno.HttpClient,
  issued: Issued,
): Promise<Response> {
  return await fetch(`${server.url}/v1/principals`, {
    method: "POST",
    client,
    headers: headers(server.bearer, {
      "idempotency-key": issued.idempotencyKey,
      "content-type": "application/json",
    }),
    body: issued.body,
  });
}

/** Records a 201; a replay must repeat the first answer byte for byte. */
async function acknowledge(world: World, issued: Issued, response: Response): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, 201, `issuance answered ${response.status}: ${text}`);
  const body = JSON.parse(text);
  assert.equal(body.principalId, issued.principalId);
  if (issued.response !== undefined) {
    assert.equal(text, issued.response.text, "a replay answers the identical body");
  }
  issued.response = { bearer: body.bearer, text };
  world.acknowledged.add(issued.principalId);
  world.uncertain.delete(issued.principalId);
  world.recent.add(issued.principalId);
}

/** Issues and revokes until the server dies under the requests. */
async function workload(
  server: Launched,
  client: Deno.HttpClient,
  world: World,
  killed: () => boolean,
) {
  const worker = async () => {
    while (!killed()) {
      const live = [...world.recent].filter((id) =>
        world.acknowledged.has(id) && !world.revoked.has(id)
      );
      const revoke = live.length > 0 && Math.random() < 0.3;
      if (revoke) {
        const id = live[Math.floor(Math.random() * live.length)];
        world.maybeRevoked.add(id);
        let response: Response;
        try {
          response = await fetch(`${server.url}/v1/principals/${id}`, {
            method: "DELETE",
            client,
            headers: headers(server.bearer),
          });
        } catch (error) {
          if (killed()) return;
          throw error;
        }
        const text = await response.text().catch(() => null);
        if (text === null && killed()) return;
        assert.equal(response.status, 204, `revocation answered ${response.status}: ${text}`);
        world.revoked.add(id);
        world.maybeRevoked.delete(id);
        world.recent.add(id);
      } else {
        const issued = newIssuance();
        world.issued.set(issued.principalId, issued);
        world.uncertain.add(issued.principalId);
        let response: Response;
        try {
          response = await postIssuance(server, client, issued);
          await acknowledge(world, issued, response);
        } catch (error) {
          if (killed()) return;
          throw error;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
}

async function authenticates(
  server: Launched,
  client: Deno.HttpClient,
  bearer: string,
): Promise<number> {
  const response = await fetch(`${server.url}/v1/runtime`, { client, headers: headers(bearer) });
  await response.body?.cancel();
  return response.status;
}

function sample<T>(items: T[], count: number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy.slice(0, count);
}

/** After a restart: acknowledged principals work, revocations hold, the store is consistent. */
async function verify(
  server: Launched,
  client: Deno.HttpClient,
  world: World,
  bootstrap: TestBootstrap,
  options: { all: boolean; audit?: boolean },
): Promise<void> {
  const principals: {
    principalId: string;
    capabilities: string[];
    expiresAt: string;
    revokedAt?: string;
  }[] = [];
  for await (const page of pages(server, client, "/v1/principals?limit=500")) {
    principals.push(...page.principals);
  }
  const byId = new Map(principals.map((entry) => [entry.principalId, entry]));
  assert.equal(byId.size, principals.length, "no principal is listed twice");
  for (const entry of principals) {
    if (entry.principalId === bootstrap.principalId) continue;
    const issued = world.issued.get(entry.principalId);
    assert.ok(issued, `listed principal ${entry.principalId} was never issued`);
    assert.deepEqual(entry.capabilities, issued.capabilities);
    assert.equal(Date.parse(entry.expiresAt), Date.parse(issued.expiresAt));
    if (entry.revokedAt !== undefined) {
      assert.ok(
        world.revoked.has(entry.principalId) || world.maybeRevoked.has(entry.principalId),
        `principal ${entry.principalId} is revoked but nobody revoked it`,
      );
    }
  }
  for (const id of world.acknowledged) {
    assert.ok(byId.has(id), `acknowledged principal ${id} is missing after the crash`);
  }
  for (const id of world.revoked) {
    assert.ok(byId.get(id)?.revokedAt, `acknowledged revocation of ${id} is lost after the crash`);
  }
  if (options.audit === true) {
    // The audit log agrees with the list: an issuance and a revocation are written with their
    // entry in one atomic step, so no kill leaves one without its entry or with two.
    const issuedEntries = await auditSubjects(server, client, "principal.issued");
    const revokedEntries = await auditSubjects(server, client, "principal.revoked");
    for (const entry of principals) {
      if (entry.principalId === bootstrap.principalId) continue;
      assert.equal(issuedEntries.get(entry.principalId), 1, `issuance of ${entry.principalId}`);
      assert.equal(
        revokedEntries.get(entry.principalId),
        entry.revokedAt === undefined ? undefined : 1,
        `revocation entries of ${entry.principalId}`,
      );
    }
    const issuedIds = principals.filter((entry) => entry.principalId !== bootstrap.principalId);
    assert.equal(issuedEntries.size, issuedIds.length, "no entry of an unlisted issuance");
  }
  // Authentication agrees with the list: all that changed before the crash, a sample of the rest.
  const recent = [...world.recent];
  const older = [...world.acknowledged].filter((id) => !world.recent.has(id));
  const checked = options.all ? [...world.acknowledged] : [...recent, ...sample(older, 30)];
  for (const id of checked) {
    if (!world.acknowledged.has(id)) continue;
    const bearer = world.issued.get(id)!.response!.bearer;
    const revoked = byId.get(id)?.revokedAt !== undefined;
    const status = await authenticates(server, client, bearer);
    assert.equal(
      status,
      revoked ? 401 : 200,
      `bearer of ${id} (revoked: ${revoked}) answered ${status}`,
    );
  }
}

/** How many audit entries of `action` each subject has, over every page of `GET /v1/audit`. */
async function auditSubjects(
  server: Launched,
  client: Deno.HttpClient,
  action: "principal.issued" | "principal.revoked",
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for await (const page of pages(server, client, `/v1/audit?action=${action}&limit=100`)) {
    for (const entry of page.entries as { subjectId: string }[]) {
      counts.set(entry.subjectId, (counts.get(entry.subjectId) ?? 0) + 1);
    }
  }
  return counts;
}

/** Every page of a cursor-paged list (`path` with its query), following `nextCursor`. */
async function* pages(
  server: Launched,
  client: Deno.HttpClient,
  path: string,
  // deno-lint-ignore no-explicit-any
): AsyncGenerator<any, void, undefined> {
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? "" : `&cursor=${cursor}`;
    const response = await fetch(`${server.url}${path}${query}`, {
      client,
      headers: headers(server.bearer),
    });
    const text = await response.text();
    assert.equal(response.status, 200, text);
    const page = JSON.parse(text);
    yield page;
    cursor = page.nextCursor ?? null;
  } while (cursor !== null);
}

/** Retries issuances cut by a kill once their lease has passed: each ends as one principal. */
async function settle(
  server: Launched,
  client: Deno.HttpClient,
  world: World,
  options: { all: boolean },
) {
  for (const id of [...world.uncertain]) {
    const issued = world.issued.get(id)!;
    if (!options.all && Date.now() - issued.sentAt < LEASE_PASSED_MS) continue;
    issued.sentAt = Date.now();
    const response = await postIssuance(server, client, issued);
    if (response.status === 409) {
      const text = await response.text();
      assert.equal(JSON.parse(text).error.code, "idempotencyInFlight", text);
      continue;
    }
    await acknowledge(world, issued, response);
    assert.equal(await authenticates(server, client, issued.response!.bearer), 200);
  }
  // A replay of an acknowledged issuance gives the same body again.
  for (const id of sample([...world.acknowledged], 3)) {
    const issued = world.issued.get(id)!;
    const response = await postIssuance(server, client, issued);
    assert.equal(response.headers.get("idempotent-replayed"), "true");
    await acknowledge(world, issued, response);
  }
}

async function crashLoop(store: (home: string) => string): Promise<void> {
  const home = await Deno.makeTempDir({ prefix: "automation-runtime-crash-" });
  const bootstrap = createTestBootstrap();
  const world: World = {
    issued: new Map(),
    acknowledged: new Set(),
    uncertain: new Set(),
    revoked: new Set(),
    maybeRevoked: new Set(),
    recent: new Set(),
  };
  let cut = 0;
  try {
    for (let crash = 0; crash <= CRASHES; crash++) {
      const server = await launch({ bootstrap, home, store: store(home) });
      const client = Deno.createHttpClient({});
      let killed = false;
      try {
        const last = crash === CRASHES;
        await verify(server, client, world, bootstrap, { all: last });
        world.recent.clear();
        if (last) {
          // Wait out the last leases, settle every cut issuance, check everything once more.
          await new Promise((resolve) => setTimeout(resolve, LEASE_PASSED_MS));
          await settle(server, client, world, { all: true });
          assert.equal(world.uncertain.size, 0, "every cut issuance is settled");
          await verify(server, client, world, bootstrap, { all: true, audit: true });
          assert.equal(await server.stop(), 0);
          break;
        }
        await settle(server, client, world, { all: false });
        const before = world.uncertain.size;
        const running = workload(server, client, world, () => killed);
        await new Promise((resolve) => setTimeout(resolve, 80 + Math.random() * 420));
        killed = true;
        server.kill("SIGKILL");
        await running;
        cut += world.uncertain.size - before;
        const code = await server.exited;
        assert.notEqual(code, 0, "the server died of the kill");
      } finally {
        killed = true;
        server.kill("SIGKILL");
        await server.exited;
        client.close();
      }
    }
    console.log(
      `${world.acknowledged.size} principals issued (${cut} cut by a kill and settled by retry), ` +
        `${world.revoked.size} revocations acknowledged, ${CRASHES} kills`,
    );
    assert.ok(
      world.acknowledged.size > CRASHES,
      `only ${world.acknowledged.size} issuances acknowledged`,
    );
    assert.ok(world.revoked.size > 0, "no revocation was acknowledged");
  } finally {
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}

Deno.test(`crash durability (Deno KV): kill -9 ${CRASHES} times during issuances and revocations`, async () => {
  await crashLoop((home) => `${home}/store.kv`);
});

Deno.test({
  name:
    `crash durability (PostgreSQL): kill -9 ${CRASHES} times during issuances and revocations${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using database = await createTestDatabase();
    await crashLoop(() => database.url);
  },
});
