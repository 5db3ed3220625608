/**
 * Sessions created through `/provider` without a turn hold active-run slots: two replicas on one
 * store, a principal allowed two active runs. Two idle sessions fill its quota (a third create is
 * refused on either replica, and never reaches the provider); a first turn runs on the slot its
 * session holds and frees it when it ends; deleting an idle session frees its slot, and so does
 * reading the run of one deleted at the provider behind the gateway's back.
 *
 * @module
 */
import assert from "node:assert/strict";
import { openKvStore } from "../../server/store/mod.ts";
import { startGateway } from "../gateway/_harness.ts";
import { serveGateway, until, userMessage } from "./_native.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

Deno.test("provider API: idle sessions hold active-run slots, across replicas, until their first turn or their deletion", async () => {
  const dir = await Deno.makeTempDir({ prefix: "idle-sessions-" });
  const store = (namespace: string) => openKvStore({ path: `${dir}/store.kv`, namespace });
  const a = serveGateway(await startGateway({ store }));
  const b = serveGateway(await startGateway({ store, replicaOf: a.gateway }));
  try {
    const { gateway } = a;
    const { bearer, principalId } = await gateway.issue(["session:read", "session:write"], {
      maxActiveRuns: 2,
    });
    const [sdkA, sdkB] = [a.sdk(bearer, { maxRetries: 0 }), b.sdk(bearer, { maxRetries: 0 })];
    const create = (sdk: typeof sdkA): Promise<Json> =>
      sdk.beta.sessions.create({
        agent: gateway.agentId,
        environment_id: gateway.environmentId,
      } as never);
    const refused = async (sdk: typeof sdkA) => {
      const sessions = gateway.fake.managedAgents!.sessions.size;
      await assert.rejects(create(sdk), (error: Json) => {
        assert.equal(error.status, 429, String(error));
        return true;
      });
      assert.equal(gateway.fake.managedAgents!.sessions.size, sessions, "no session was opened");
    };

    const first = await create(sdkA);
    const second = await create(sdkB);
    const idle = (await gateway.store.runs.get(first.id))!;
    assert.equal(idle.state, "completed", "an idle session reads completed, as before");
    assert.equal(await gateway.store.runs.countSlots(principalId, Date.now()), 2);
    await refused(sdkA);
    await refused(sdkB);

    // Its first turn runs on the slot the session holds (no refusal), then frees it.
    await sdkB.beta.sessions.events.send(first.id, { events: [userMessage("go")] } as never);
    await until(
      async () => (await gateway.store.runs.get(first.id))?.stopReason === "end_turn",
      "the first turn ended",
    );
    assert.equal(await gateway.store.runs.countSlots(principalId, Date.now()), 1);
    const third = await create(sdkA);
    await refused(sdkB);

    // Deleting an idle session frees its slot: its run fails (the session is gone).
    await sdkB.beta.sessions.delete(second.id);
    assert.equal((await gateway.store.runs.get(second.id))?.state, "failed");
    assert.equal(await gateway.store.runs.countSlots(principalId, Date.now()), 1);
    await create(sdkB);

    // One deleted at the provider behind the gateway's back: reading its run finds it gone.
    gateway.fake.managedAgents!.sessions.delete(third.id);
    const read = await gateway.request("GET", `/v1/runs/${third.id}`, { bearer });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.json.state, "failed");
    assert.equal("awaitingFirstTurn" in read.json, false);
    assert.equal(await gateway.store.runs.countSlots(principalId, Date.now()), 1);
  } finally {
    await b.stop();
    await b.gateway.close();
    await a.stop();
    await a.gateway.close();
    await Deno.remove(dir, { recursive: true });
  }
});
