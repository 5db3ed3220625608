/**
 * The store fences a run's log by its tail lease. Two replicas on one store, one run; replica A
 * tails it and cannot renew its lease (its lease calls fail), and its clock stands still: by A's
 * clock its lease never comes near its end, so its own check (stop a fifth of the lease before
 * it may lapse) never stops it. Replica B takes the run over once the lease lapsed by B's clock.
 * A goes on reading the stream and appending, but every append names A as the lease's holder and
 * the store refuses it, writing nothing; A's tail then stops. A message streamed meanwhile (A's
 * appends slow, B's appends of the long message slower, as in `lease_overlap_test.ts`, so the two
 * would join its deltas differently) is logged once, by B.
 *
 * @module
 */
import assert from "node:assert/strict";
import { openKvStore, wrapStore } from "../../server/store/mod.ts";
import { RunLeaseLostError, type Store, StoreUnavailableError } from "../../server/store/types.ts";
import { type Gateway, startGateway } from "../gateway/_harness.ts";

const LEASE_MS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(predicate: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await predicate()) return;
    await sleep(10);
  }
  assert.fail(`${what}: not within 3 s`);
}

Deno.test("lease fence: a tail whose clock says its lease holds still is refused by the store once another replica took the run; a message is logged once", async () => {
  let raw: Store | undefined;
  /** Replica A's clock: the wall clock until it stops. */
  let frozenAt: number | undefined;
  const a = {
    leaseFails: false,
    slow: false,
    /** A's appends after B took the run, and how many of them the store refused. */
    appendsAfterTakeover: 0,
    refused: 0,
    /** A's appends started after its first refusal. */
    appendsAfterRefusal: 0,
  };
  let takenOver = false;
  const first = await startGateway({
    store: async (namespace) => {
      raw = await openKvStore({ path: ":memory:", namespace });
      return wrapStore(raw, (part, method, call) => {
        if (part !== "events") return call;
        const forward = call as (...args: unknown[]) => Promise<unknown>;
        if (method === "acquireLease") {
          return (...args: unknown[]) =>
            a.leaseFails
              ? Promise.reject(new StoreUnavailableError("the test: no lease calls"))
              : forward(...args);
        }
        if (method === "appendBatch") {
          return async (...args: unknown[]) => {
            if (a.refused > 0) a.appendsAfterRefusal++;
            if (takenOver) a.appendsAfterTakeover++;
            if (a.slow) await sleep(100);
            try {
              return await forward(...args);
            } catch (error) {
              if (error instanceof RunLeaseLostError) a.refused++;
              throw error;
            }
          };
        }
        return call;
      });
    },
    serverOptions: { runLeaseMs: LEASE_MS, now: () => frozenAt ?? Date.now() },
  });
  let second: Gateway | undefined;
  try {
    first.holdTurns(true);
    const { bearer } = await first.issue(["session:read", "session:write"]);
    const started = await first.request("POST", "/v1/runs", { bearer, body: { input: "go" } });
    assert.equal(started.status, 201, started.text);
    const runId: string = started.json.runId;
    const streams = () =>
      first.fake.requests.filter((request) =>
        request.method === "GET" && request.path === `/v1/sessions/${runId}/events/stream`
      ).length;
    await until(() => streams() === 1, "replica A tails the run");
    second = await startGateway({
      replicaOf: first,
      store: () =>
        Promise.resolve({
          ...wrapStore(raw!, (part, method, call) => {
            if (part !== "events" || method !== "appendBatch") return call;
            return async (...args: Parameters<Store["events"]["appendBatch"]>) => {
              const long = args[1].events.some((entry) =>
                entry.event.type === "message.delta" && entry.event.text.includes("L")
              );
              if (long) await sleep(250);
              return raw!.events.appendBatch(...args);
            };
          }),
          close: () => Promise.resolve(), // A closes the store
        }),
      serverOptions: { runLeaseMs: LEASE_MS },
    });
    // A's clock stops and its lease calls fail: by its clock its lease holds for ever.
    frozenAt = Date.now();
    a.leaseFails = true;
    await until(() => streams() === 2, "replica B takes the run over once the lease lapsed");
    takenOver = true;
    a.slow = true;
    const long = Array.from({ length: 15 }, (_, i) => `L${String(i).padStart(3, "0")}`).join("");
    first.fake.managedAgents!.emit(runId, {
      type: "agent.message",
      content: [{ type: "text", text: "x" }],
    });
    await sleep(30);
    first.fake.managedAgents!.emit(runId, {
      type: "agent.message",
      content: [{ type: "text", text: long }],
    });
    const logged = async () =>
      (await raw!.events.list(runId, 0, 1_000)).some((entry) =>
        entry.event.type === "message.completed" && entry.event.text === long
      );
    await until(logged, "the long message is logged");
    await sleep(400); // every tail's appends of it have landed
    const entries = await raw!.events.list(runId, 0, 1_000);
    for (const [at, entry] of entries.entries()) {
      if (entry.event.type !== "message.completed") continue;
      const deltas = entries.filter((other) => other.sourceId.startsWith(`${entry.sourceId}#d`));
      assert.equal(
        deltas.map((delta) => (delta.event as { text: string }).text).join(""),
        entry.event.text,
        "each message's deltas spell its text once",
      );
      assert.ok(deltas.every((delta) => entries.indexOf(delta) < at), "deltas come before");
    }
    assert.deepEqual(entries.map((entry) => entry.seq), entries.map((_, i) => i + 1), "no gap");
    assert.equal(new Set(entries.map((entry) => entry.sourceId)).size, entries.length);
    // A's own check did not stop it: it tried to append, and the store refused every try.
    assert.ok(a.appendsAfterTakeover > 0, "A still appended after the takeover (its clock)");
    assert.equal(a.refused, a.appendsAfterTakeover, "the store refused each of them");
    assert.equal(a.appendsAfterRefusal, 0, "A's tail stopped at its first refusal");
  } finally {
    a.slow = false;
    await second?.close();
    await first.close();
  }
});
