/**
 * A run record left behind its log: the tail appends a turn's terminal entry, then its write of
 * the run record fails (a store wrapper refuses it). The next tail on the run (the same replica
 * reconnecting, or another replica taking the run over once the first is gone) finds nothing new
 * to append, and brings the record up to the log: the run ends, its active slot is freed, and a
 * page of its events says it has finished, without a read from the provider.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { RunEventPage } from "../../wire/mod.ts";
import { readEventPage } from "../../server/runs/event_page.ts";
import { openKvStore, wrapStore } from "../../server/store/mod.ts";
import {
  type Store,
  type StoredRunRecord,
  StoreUnavailableError,
} from "../../server/store/types.ts";
import { type Gateway, startGateway } from "../gateway/_harness.ts";

/** A page as a caller reads it: the JSON text `readEventPage` answers, parsed. */
async function pageOf(options: Parameters<typeof readEventPage>[0]): Promise<RunEventPage> {
  return JSON.parse(await readEventPage(options));
}

/** Which run record writes a test refuses: by the record written and the one it replaces. */
type Refusal = (record: StoredRunRecord, expected: StoredRunRecord | undefined) => boolean;

/** `store` with the run record writes `refuse` picks refused (a store failure), counted. */
function refusing(store: Store, refuse: Refusal): { store: Store; refused: number } {
  const wrapped = {
    refused: 0,
    store: wrapStore(store, (part, method, call) => {
      if (part !== "runs" || method !== "update") return call;
      return (record: StoredRunRecord, expected?: StoredRunRecord, ...rest: unknown[]) => {
        if (refuse(record, expected)) {
          wrapped.refused++;
          return Promise.reject(new StoreUnavailableError("refused by the test"));
        }
        return (call as (...args: unknown[]) => Promise<boolean>)(record, expected, ...rest);
      };
    }),
  };
  return wrapped;
}

/** A gateway on an in-memory KV store whose run record writes `refuse` picks are refused. */
async function refusingGateway(
  refuse: Refusal,
): Promise<{ gateway: Gateway; refused: () => number }> {
  let wrapped: ReturnType<typeof refusing> | undefined;
  const gateway = await startGateway({
    store: async (namespace) => {
      wrapped = refusing(await openKvStore({ path: ":memory:", namespace }), refuse);
      return wrapped.store;
    },
  });
  return { gateway, refused: () => wrapped!.refused };
}

/** Refuses the writes of a run's end while `on()` says so. */
const ends = (on: () => boolean): Refusal => (record) => record.state === "completed" && on();

async function until(predicate: () => boolean | Promise<boolean>, what: string, ms: number) {
  const deadline = Date.now() + ms;
  while (!await predicate()) {
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Starts a run that ends at once (the fake's echo turn); answers its id and owner. */
async function endingRun(gateway: Gateway): Promise<{ runId: string; principalId: string }> {
  const { bearer, principalId } = await gateway.issue(["session:read", "session:write"]);
  const started = await gateway.request("POST", "/v1/runs", { bearer, body: { input: "go" } });
  assert.equal(started.status, 201, started.text);
  return { runId: started.json.runId, principalId };
}

/** The log's terminal entry is there. */
async function logEnded(store: Store, runId: string): Promise<boolean> {
  const entries = await store.events.list(runId, 0, 1_000);
  return entries.some((entry) => entry.event.type === "run.completed");
}

/** The record took in the whole log and ended; the slot is free; a page says finished. */
async function assertCaughtUp(store: Store, runId: string, principalId: string): Promise<void> {
  await until(
    async () => (await store.runs.get(runId))?.state === "completed",
    "the record shows the run's end",
    5_000,
  );
  const entries = await store.events.list(runId, 0, 1_000);
  const record = (await store.runs.get(runId))!;
  assert.equal(record.lastEventSeq, entries.at(-1)!.seq);
  assert.equal(record.stopReason, "end_turn");
  assert.equal(await store.runs.countSlots(principalId, Date.now()), 0, "the slot is freed");
  const began = performance.now();
  const page = await pageOf({ store, runId, after: 0, limit: 1_000 });
  assert.equal(page.terminal, true);
  assert.ok(performance.now() - began < 500, "the page did not wait for the record");
}

Deno.test("record catch-up: a tail whose record write failed after the terminal append brings the record up to the log on reconnecting", async () => {
  let refuse = true;
  // Only the first write of the run's end.
  const { gateway, refused } = await refusingGateway(ends(() => {
    const now = refuse;
    refuse = false;
    return now;
  }));
  try {
    const { runId, principalId } = await endingRun(gateway);
    await until(() => refused() === 1, "the record write of the end was refused", 5_000);
    assert.ok(await logEnded(gateway.store, runId), "the terminal entry was appended");
    await assertCaughtUp(gateway.store, runId, principalId);
    assert.ok(gateway.logs.some((line) => line.includes("run record behind its log")));
    assert.equal(
      gateway.fake.requests.filter((r) => r.method === "GET" && r.path === `/v1/sessions/${runId}`)
        .length,
      0,
      "no status read from the provider",
    );
  } finally {
    await gateway.close();
  }
});

Deno.test("record catch-up: a replica that takes over a run whose record lags its log brings the record up to it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "record-catch-up-" });
  const path = `${dir}/store.kv`;
  const serverOptions = { runLeaseMs: 600 };
  let wrapped: ReturnType<typeof refusing> | undefined;
  // Replica a never records a run's end; b shares its store file.
  const a = await startGateway({
    serverOptions,
    store: async (namespace) => {
      wrapped = refusing(await openKvStore({ path, namespace }), ends(() => true));
      return wrapped.store;
    },
  });
  let b: Gateway | undefined;
  let aServing = true;
  try {
    const { runId, principalId } = await endingRun(a);
    await until(() => wrapped!.refused >= 1, "a's record write of the end was refused", 5_000);
    assert.ok(await logEnded(a.store, runId), "a appended the terminal entry");
    assert.equal((await a.store.runs.get(runId))?.state, "running");
    // a goes away (its tail's lease is released; the fake provider stays); b finds the run
    // active and takes it.
    aServing = false;
    await a.server.close();
    await a.store.close();
    b = await startGateway({
      serverOptions,
      replicaOf: a,
      store: (namespace) => openKvStore({ path, namespace }),
    });
    await assertCaughtUp(b.store, runId, principalId);
  } finally {
    if (aServing) {
      await a.server.close();
      await a.store.close();
    }
    await b?.close();
    await a.fake.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("record catch-up: an earlier turn's end in the log does not end the turn a follow-up started", async () => {
  let refuse = true;
  // The tail's writes (they move lastEventSeq) while `refuse`; a follow-up's goes through.
  const { gateway, refused } = await refusingGateway((record, expected) =>
    refuse && expected !== undefined && record.lastEventSeq > expected.lastEventSeq
  );
  try {
    const { bearer, principalId } = await gateway.issue(["session:read", "session:write"]);
    const started = await gateway.request("POST", "/v1/runs", { bearer, body: { input: "one" } });
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;
    // Turn 1 ends in the log; the record never hears of it and stays running.
    await until(() => logEnded(gateway.store, runId), "turn 1 ended in the log", 5_000);
    await until(() => refused() >= 1, "the tail's record write was refused", 5_000);
    // A follow-up starts turn 2 (held open); the record counts it.
    gateway.holdTurns(true);
    const sent = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      bearer,
      body: { input: "two" },
    });
    assert.equal(sent.status, 202, sent.text);
    assert.equal((await gateway.store.runs.get(runId))?.turns, 2);
    const running = async () =>
      (await gateway.store.events.list(runId, 0, 1_000)).filter((entry) =>
        entry.event.type === "run.status" && entry.event.state === "running"
      ).length;
    await until(async () => await running() >= 2, "turn 2 began in the log", 5_000);
    // The record writes go through again: the next tail catches up with both turns' entries.
    refuse = false;
    const last = (await gateway.store.events.list(runId, 0, 1_000)).at(-1)!.seq;
    await until(
      async () => (await gateway.store.runs.get(runId))!.lastEventSeq >= last,
      "the record took in the log",
      8_000,
    );
    const record = (await gateway.store.runs.get(runId))!;
    assert.equal(record.state, "running", "turn 1's end did not end turn 2");
    assert.equal(record.endedAt, undefined);
    assert.equal(await gateway.store.runs.countSlots(principalId, Date.now()), 1);
  } finally {
    await gateway.close();
  }
});
