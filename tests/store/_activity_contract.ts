/**
 * The activity part of the store contract: entries numbered from 1 without gaps, keys that
 * dedupe (within a batch, across batches and replicas), pages after a seq with and without a
 * principal filter, a run's latest entries, entries appended in the same step as a run's creation
 * or update or a tool answer's completion (and not when that write does not happen), appends
 * from two handles at once seen by a reader in order without a gap, wake-ups on another handle,
 * and the purge (after which seqs still grow). Registered by `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ActivityInput, Store } from "../../server/store/types.ts";
import { type ContractCase, testRun, twinOf } from "./_fixtures.ts";

function stateInput(runId: string, principalId: string, at = new Date().toISOString()) {
  return {
    type: "run.state",
    at,
    runId,
    principalId,
    state: "requires_action",
    previousState: "running",
  } satisfies ActivityInput;
}

function pendingInput(runId: string, principalId: string, toolUseId: string): ActivityInput {
  return {
    type: "tool.pending",
    at: new Date().toISOString(),
    runId,
    principalId,
    toolUseId,
    kind: "confirmation",
    name: "bash",
    requestedAt: "2026-01-01T00:00:00.000Z",
    deniedAt: "2026-01-01T00:10:00.000Z",
    input: { command: "ls" },
    key: `pending:${toolUseId}`,
  };
}

async function everything(store: Store): Promise<number[]> {
  return (await store.activity.list({ after: 0, limit: 1000 })).entries.map((e) => e.seq);
}

/** Registers the activity cases. */
export function runActivityContract(test: ContractCase): void {
  test("activity: appends number from 1 without gaps; a key already in the run's log is skipped", async (store) => {
    const runId = `sesn_${crypto.randomUUID()}`;
    const owner = crypto.randomUUID();
    assert.equal(await store.activity.head(), 0);
    const first = await store.activity.append([
      stateInput(runId, owner),
      pendingInput(runId, owner, "sevt_a"),
      pendingInput(runId, owner, "sevt_a"),
    ]);
    assert.deepEqual(first.map((e) => [e.seq, e.type]), [[1, "run.state"], [2, "tool.pending"]]);
    const pending = first[1];
    assert.ok(pending.type === "tool.pending");
    assert.deepEqual(pending.input, { command: "ls" });
    assert.deepEqual(await store.activity.append([pendingInput(runId, owner, "sevt_a")]), []);
    // The same key in another run is that run's own.
    const other = await store.activity.append([
      pendingInput(`sesn_${crypto.randomUUID()}`, owner, "sevt_a"),
      pendingInput(runId, owner, "sevt_b"),
    ]);
    assert.deepEqual(other.map((e) => e.seq), [3, 4]);
    assert.equal(await store.activity.head(), 4);
    assert.deepEqual(await everything(store), [1, 2, 3, 4]);
    const read = (await store.activity.list({ after: 1, limit: 1 })).entries[0];
    assert.deepEqual(read, pending);
  });

  test("activity: pages after a seq; a principal's page passes other principals' entries", async (store) => {
    const mine = crypto.randomUUID();
    const theirs = crypto.randomUUID();
    const runA = `sesn_${crypto.randomUUID()}`;
    const runB = `sesn_${crypto.randomUUID()}`;
    await store.activity.append([
      stateInput(runA, mine),
      stateInput(runB, theirs),
      stateInput(runB, theirs),
      stateInput(runA, mine),
      stateInput(runB, theirs),
    ]);
    const page = await store.activity.list({ after: 1, limit: 2 });
    assert.deepEqual(page.entries.map((e) => e.seq), [2, 3]);
    assert.equal(page.last, 3);
    const own = await store.activity.list({ after: 0, limit: 10, principalId: mine });
    assert.deepEqual(own.entries.map((e) => e.seq), [1, 4]);
    assert.equal(own.last, 5);
    const one = await store.activity.list({ after: 0, limit: 1, principalId: mine });
    assert.deepEqual([one.entries.map((e) => e.seq), one.last], [[1], 1]);
    const none = await store.activity.list({ after: 5, limit: 10, principalId: mine });
    assert.deepEqual([none.entries, none.last], [[], 5]);
  });

  test("activity: a run's latest entries, oldest first", async (store) => {
    const owner = crypto.randomUUID();
    const runId = `sesn_${crypto.randomUUID()}`;
    for (let i = 0; i < 4; i++) {
      await store.activity.append([
        stateInput(runId, owner),
        stateInput(`sesn_${crypto.randomUUID()}`, owner),
      ]);
    }
    assert.deepEqual((await store.activity.listRun(runId, 3)).map((e) => e.seq), [3, 5, 7]);
    assert.deepEqual((await store.activity.listRun(runId, 100)).map((e) => e.seq), [1, 3, 5, 7]);
    assert.deepEqual(await store.activity.listRun("sesn_none", 10), []);
  });

  test("activity: a run's creation, a compare-and-set update and an answer's completion carry their entries, only when they write", async (store) => {
    const principalId = crypto.randomUUID();
    const slotId = `reservation:${crypto.randomUUID()}`;
    assert.equal(
      await store.runs.reserveSlot({
        principalId,
        slotId,
        principalLimit: 5,
        serviceLimit: 100,
        now: Date.now(),
        leaseMs: 60_000,
      }),
      "reserved",
    );
    const run = testRun({ principalId });
    const runId = run.runId;
    await store.runs.create(run, slotId, undefined, [{
      type: "run.created",
      at: run.createdAt,
      runId,
      principalId,
      state: "running",
      agentId: run.agentId,
      key: "created",
    }]);
    const waiting = { ...run, state: "requires_action" as const };
    assert.equal(
      await store.runs.update(waiting, run, [
        stateInput(runId, principalId),
        pendingInput(runId, principalId, "sevt_1"),
      ]),
      true,
    );
    // A lost compare-and-set writes no entry.
    assert.equal(
      await store.runs.update({ ...run, state: "failed" }, run, [stateInput(runId, principalId)]),
      false,
    );
    const claim = await store.answers.claim({
      runId,
      toolUseId: "sevt_1",
      kind: "confirmation",
      principalId,
      result: "allow",
      now: Date.now(),
      staleMs: 30_000,
    });
    assert.ok(claim.state === "claimed");
    const answered: ActivityInput = {
      type: "tool.answered",
      at: new Date().toISOString(),
      runId,
      principalId,
      toolUseId: "sevt_1",
      kind: "confirmation",
      result: "allow",
      answeredBy: principalId,
      key: "answered:sevt_1",
    };
    const final = { principalId, result: "allow" as const, answeredAt: new Date().toISOString() };
    // A completion with the wrong token writes nothing.
    assert.equal(await store.answers.complete(runId, "sevt_1", "wrong", final, [answered]), false);
    assert.equal(
      await store.answers.complete(runId, "sevt_1", claim.token, final, [answered]),
      true,
    );
    const log = await store.activity.listRun(runId, 100);
    assert.deepEqual(log.map((e) => [e.seq, e.type]), [
      [1, "run.created"],
      [2, "run.state"],
      [3, "tool.pending"],
      [4, "tool.answered"],
    ]);
    assert.equal(await store.activity.head(), 4);
    // Writes without entries append none.
    assert.equal(await store.runs.update({ ...waiting, lastEventSeq: 3 }, waiting), true);
    assert.equal(await store.activity.head(), 4);
  });

  test(
    "activity: appends from two handles at once leave one gap-free log, read in order while it grows",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const owner = crypto.randomUUID();
        const seen: number[] = [];
        let writing = true;
        const reader = (async () => {
          let after = 0;
          while (writing || after < 40) {
            const page = await store.activity.list({ after, limit: 100 });
            for (const entry of page.entries) seen.push(entry.seq);
            after = page.last;
            if (page.entries.length === 0) await new Promise((r) => setTimeout(r, 5));
          }
        })();
        await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            (i % 2 === 0 ? store : twin).activity.append([
              stateInput(`sesn_${i}`, owner),
              stateInput(`sesn_${i}`, owner),
            ])),
        );
        writing = false;
        await reader;
        assert.deepEqual(seen, Array.from({ length: 40 }, (_, i) => i + 1));
      } finally {
        await twin.close();
      }
    },
  );

  test("activity: a watcher on another handle is woken by an append", async (store, openTwin) => {
    const twin = await twinOf(store, openTwin);
    const woken = Promise.withResolvers<number | undefined>();
    let appended = false;
    const stop = twin.activity.watch((last) => {
      if (appended) woken.resolve(last);
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      appended = true;
      await store.activity.append([stateInput(`sesn_${crypto.randomUUID()}`, "p")]);
      const timer = setTimeout(() => woken.reject(new Error("no wake-up within 3 s")), 3_000);
      const last = await woken.promise.finally(() => clearTimeout(timer));
      if (last !== undefined) assert.equal(last, 1);
    } finally {
      stop();
      await twin.close();
    }
  });

  test("activity: the purge deletes entries older than its time; seqs keep growing after it", async (store) => {
    const runId = `sesn_${crypto.randomUUID()}`;
    await store.activity.append([
      stateInput(runId, "p", "2000-01-01T00:00:00.000Z"),
      pendingInput(runId, "p", "sevt_old"),
    ]);
    assert.equal(await store.activity.purge("2001-01-01T00:00:00.000Z"), 1);
    assert.deepEqual(await everything(store), [2]);
    assert.equal(await store.activity.purge(new Date(Date.now() + 60_000).toISOString()), 1);
    assert.deepEqual(await everything(store), []);
    const next = await store.activity.append([stateInput(runId, "p")]);
    assert.deepEqual(next.map((e) => e.seq), [3]);
    assert.deepEqual((await store.activity.listRun(runId, 10)).map((e) => e.seq), [3]);
  });
}
