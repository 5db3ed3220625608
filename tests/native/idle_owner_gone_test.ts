/**
 * Idle sessions of a revoked or expired principal give their active-run slots back: two replicas
 * on one store with a service-wide limit of two active runs, filled by the idle sessions of one
 * principal. Revoking it (on one replica) frees both slots at once, so another principal's create
 * refused before is admitted on the other; an expiry (a test clock shared by both replicas) frees
 * them when a create finds the service full, or at the periodic store cleanup. The sessions stay
 * at the provider, and an admin's
 * first turn to one of them takes a slot again, like a follow-up that wakes a finished run.
 *
 * @module
 */
import assert from "node:assert/strict";
import { openKvStore } from "../../server/store/mod.ts";
import { startGateway } from "../gateway/_harness.ts";
import { serveGateway, until, userMessage, type VendorClient } from "./_native.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const DAY = 86_400_000;

/** Two replicas on one KV store, a service-wide limit of two, the clock `now`. */
async function replicas(now: () => number, cleanupIntervalMs = 0) {
  const dir = await Deno.makeTempDir({ prefix: "idle-owner-gone-" });
  const store = (namespace: string) => openKvStore({ path: `${dir}/store.kv`, namespace });
  const serverOptions = { now, cleanupIntervalMs };
  const a = serveGateway(await startGateway({ store, maxActiveRuns: 2, serverOptions }));
  const b = serveGateway(
    await startGateway({ store, maxActiveRuns: 2, serverOptions, replicaOf: a.gateway }),
  );
  const { gateway } = a;
  const create = (sdk: VendorClient): Promise<Json> =>
    sdk.beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
    } as never);
  const refused = async (sdk: VendorClient) => {
    await assert.rejects(create(sdk), (error: Json) => {
      assert.equal(error.status, 429, String(error));
      return true;
    });
  };
  return {
    a,
    b,
    gateway,
    create,
    refused,
    async close() {
      await b.stop();
      await b.gateway.close();
      await a.stop();
      await a.gateway.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("provider API: revoking a principal frees its idle sessions' slots on every replica; an admin's first turn takes one again", async () => {
  const setup = await replicas(() => Date.now());
  try {
    const { a, b, gateway, create, refused } = setup;
    const owner = await gateway.issue(["session:read", "session:write"], { maxActiveRuns: 2 });
    const other = await gateway.issue(["session:read", "session:write"]);
    const first = await create(a.sdk(owner.bearer, { maxRetries: 0 }));
    await create(b.sdk(owner.bearer, { maxRetries: 0 }));
    const otherSdk = b.sdk(other.bearer, { maxRetries: 0 });
    await refused(otherSdk);

    const revoked = await gateway.request("DELETE", `/v1/principals/${owner.principalId}`);
    assert.equal(revoked.status, 204, revoked.text);
    // Freed by the revocation itself, before any start asks.
    assert.equal(await gateway.store.runs.countSlots(null, Date.now()), 0);
    const run = (await gateway.store.runs.get(first.id))!;
    assert.equal(run.state, "completed");
    assert.equal(run.awaitingFirstTurn, undefined);
    assert.ok(gateway.fake.managedAgents!.sessions.has(first.id), "the session stays");
    await create(otherSdk);
    const second = await create(otherSdk);

    // The admin's first turn to the revoked principal's session reserves a slot again: refused
    // while the service is full, run once a slot is free, then counted.
    gateway.holdTurns(true);
    const adminSdk = a.sdk(gateway.admin, { maxRetries: 0 });
    const firstTurn = () =>
      adminSdk.beta.sessions.events.send(first.id, { events: [userMessage("go")] } as never);
    await assert.rejects(firstTurn(), (error: Json) => {
      assert.equal(error.status, 429, String(error));
      return true;
    });
    await otherSdk.beta.sessions.delete(second.id);
    await firstTurn();
    assert.equal((await gateway.store.runs.get(first.id))?.state, "running");
    assert.equal(await gateway.store.runs.countSlots(owner.principalId, Date.now()), 1);
    await refused(otherSdk);
  } finally {
    await setup.close();
  }
});

Deno.test("provider API: an expired principal's idle sessions free their slots when a create finds the service full", async () => {
  let clock = Date.now();
  const setup = await replicas(() => clock);
  try {
    const { a, b, gateway, create, refused } = setup;
    const owner = await gateway.issue(["session:read", "session:write"], { maxActiveRuns: 2 });
    const other = await gateway.issue(["session:read", "session:write"], {
      expiresAt: new Date(clock + 10 * DAY).toISOString(),
    } as never);
    await create(a.sdk(owner.bearer, { maxRetries: 0 }));
    await create(b.sdk(owner.bearer, { maxRetries: 0 }));
    const otherSdk = b.sdk(other.bearer, { maxRetries: 0 });
    await refused(otherSdk);

    clock += 2 * DAY; // the owner (a day) has expired; the other (ten days) has not
    await create(otherSdk);
    assert.equal(await gateway.store.runs.countSlots(owner.principalId, clock), 0);
    assert.equal(await gateway.store.runs.countSlots(null, clock), 1);
    assert.equal(gateway.fake.managedAgents!.sessions.size, 3, "the idle sessions stay");
  } finally {
    await setup.close();
  }
});

Deno.test("provider API: the periodic cleanup frees an expired principal's idle sessions' slots", async () => {
  let clock = Date.now();
  const setup = await replicas(() => clock, 60_000);
  try {
    const { a, gateway, create } = setup;
    const owner = await gateway.issue(["session:read", "session:write"]);
    await create(a.sdk(owner.bearer, { maxRetries: 0 }));
    assert.equal(await gateway.store.runs.countSlots(null, clock), 1);
    clock += 2 * DAY;
    // Any request past the interval starts the cleanup; no start is refused meanwhile.
    await gateway.request("GET", "/v1/runs");
    await until(
      async () => await gateway.store.runs.countSlots(null, clock) === 0,
      "the cleanup released the slot",
    );
  } finally {
    await setup.close();
  }
});
