import assert from "node:assert/strict";
import { openKvStore, openStore, type Store, StoreLocationError } from "../../server/store/mod.ts";
import type { AuditEntryInput, StoredRunRecord } from "../../server/store/run_types.ts";
import { auditNumbering } from "../../server/store/kv/_audit.ts";
import { openChangeMarker } from "../../server/store/kv/_change_marker.ts";
import { KvCommits } from "../../server/store/kv/_commit.ts";
import { KvRuns } from "../../server/store/kv/_runs.ts";
import { KvActivityLog } from "../../server/store/kv/_activity.ts";
import { KvEvents } from "../../server/store/kv/_events.ts";
import { runStoreContract, testPrincipal } from "./contract.ts";
import { testRun } from "./_fixtures.ts";
import { assertEveryPage } from "./_event_contract.ts";

const directory = Deno.makeTempDirSync({ prefix: "automation-runtime-kv-" });
const path = `${directory}/store.kv`;

runStoreContract("kv", (namespace) => openKvStore({ path, namespace }));

Deno.test("kv store: records survive closing and reopening the file", async () => {
  const namespace = crypto.randomUUID().replaceAll("-", "");
  const record = testPrincipal();
  const first = await openKvStore({ path, namespace });
  try {
    assert.equal(await first.principals.create(record), "created");
  } finally {
    await first.close();
  }
  const second = await openKvStore({ path, namespace });
  try {
    assert.deepEqual(await second.principals.get(record.principalId), record);
  } finally {
    await second.close();
  }
});

Deno.test("openStore opens KV at a path, creating its directory, and refuses unknown URL schemes", async () => {
  const nested = `${directory}/nested/deeper/store.kv`;
  const store = await openStore({ namespace: "0".repeat(32), defaultKvPath: nested });
  try {
    assert.equal(store.kind, "kv");
    assert.equal((await Deno.stat(`${directory}/nested/deeper`)).isDirectory, true);
  } finally {
    await store.close();
  }
  // A store given by location (`--store`): the file 0600 (SQLite's companions too), every
  // directory created for it 0700, whatever the umask lets a plain open do.
  const given = `${directory}/given/store.kv`;
  const previous = Deno.umask(0o022);
  try {
    const opened = await openStore({ namespace: "0".repeat(32), location: given });
    try {
      await opened.principals.create(testPrincipal());
      for (const file of [given, `${given}-wal`, `${given}-shm`]) {
        const stat = await Deno.stat(file).catch(() => null);
        if (file === given) assert.ok(stat !== null);
        if (stat !== null) assert.equal((stat.mode ?? 0) & 0o777, 0o600, file);
      }
      assert.equal(((await Deno.stat(`${directory}/given`)).mode ?? 0) & 0o777, 0o700);
    } finally {
      await opened.close();
    }
  } finally {
    Deno.umask(previous);
  }
  await assert.rejects(
    () => openStore({ location: "mysql://user:hunter2@db/x", namespace: "0".repeat(32) }),
    (error: unknown) => {
      assert.ok(error instanceof StoreLocationError);
      assert.ok(!error.message.includes("hunter2"));
      return true;
    },
  );
});

Deno.test("kv store: four workers opening one new file at the same instant all open it", async () => {
  // Without waiting out the busy file, about 1 open in 16 failed here with "database is locked".
  const workers = Array.from(
    { length: 4 },
    () => new Worker(new URL("./_open_worker.ts", import.meta.url), { type: "module" }),
  );
  try {
    const failures: string[] = [];
    for (let round = 0; round < 40; round++) {
      const file = `${directory}/race-${round}.kv`;
      const answers = await Promise.all(workers.map((worker) =>
        new Promise<string>((resolve) => {
          worker.onmessage = (event: MessageEvent<string>) => resolve(event.data);
          worker.postMessage(file);
        })
      ));
      failures.push(...answers.filter((answer) => answer !== "ok"));
    }
    assert.deepEqual(failures, []);
  } finally {
    for (const worker of workers) worker.terminate();
  }
});

Deno.test("kv store: remove the temporary directory", () => {
  Deno.removeSync(directory, { recursive: true });
});

Deno.test("kv store: the change marker moves with every commit of another connection, across WAL checkpoints", async () => {
  const own = await Deno.makeTempDir({ prefix: "automation-runtime-marker-" });
  const file = `${own}/marker.kv`;
  const namespace = crypto.randomUUID().replaceAll("-", "");
  const store = await openKvStore({ path: file, namespace });
  const other = await Deno.openKv(file);
  const marker = openChangeMarker(file)!;
  try {
    await store.principals.get(crypto.randomUUID());
    let before = marker.read();
    assert.equal(typeof before, "number");
    // 4 KiB a commit: 1,500 commits pass SQLite's automatic checkpoint (1,000 pages) several
    // times, so the WAL restarts from its start while the marker is being read.
    const value = "x".repeat(4096);
    let unchangedReads = 0;
    for (let i = 0; i < 1500; i++) {
      await other.set(["filler", i % 50], value);
      const after = marker.read();
      // Null is allowed (it means "read the store"); equal to the value before the commit is not.
      assert.notEqual(after, before, `commit ${i} left the marker at ${before}`);
      if (after !== null && after === marker.read()) unchangedReads++;
      before = after;
    }
    assert.ok(unchangedReads > 1400, "with no commit in between, the marker holds");
  } finally {
    marker.close();
    other.close();
    await store.close();
    await Deno.remove(own, { recursive: true });
  }
});

/** Two store handles on one KV file, as two processes or workers hold it. */
async function twoHandles(): Promise<{ first: Store; second: Store; close(): Promise<void> }> {
  const own = await Deno.makeTempDir({ prefix: "automation-runtime-two-" });
  const file = `${own}/two.kv`;
  const namespace = crypto.randomUUID().replaceAll("-", "");
  const first = await openKvStore({ path: file, namespace });
  const second = await openKvStore({ path: file, namespace });
  return {
    first,
    second,
    async close() {
      await first.close();
      await second.close();
      await Deno.remove(own, { recursive: true });
    },
  };
}

function auditEntry(subjectId: string = crypto.randomUUID()): AuditEntryInput {
  return {
    at: new Date().toISOString(),
    action: "principal.issued",
    actorId: crypto.randomUUID(),
    subjectId,
    correlationId: crypto.randomUUID(),
    outcome: "ok",
  };
}

/** Every seq of the audit log, through all its pages. */
async function allAuditSeqs(store: Store): Promise<number[]> {
  const seqs: number[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.audit.list({ limit: 100, cursor });
    seqs.push(...page.entries.map((e) => e.seq));
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return seqs;
}

Deno.test("kv store: two handles taking turns at the audit log number it without gap or repeat", async () => {
  // Each handle commits against the seq it last wrote; the other handle's commits move it, so
  // every turn must notice, read the seq and number after it.
  const { first, second, close } = await twoHandles();
  try {
    const seqs: number[] = [];
    for (let turn = 0; turn < 12; turn++) {
      const store = turn % 2 === 0 ? first : second;
      if (turn % 3 === 0) {
        const record = testPrincipal();
        assert.equal(
          await store.principals.create(record, undefined, auditEntry(record.principalId)),
          "created",
        );
      } else {
        seqs.push((await store.audit.append(auditEntry())).seq);
      }
      // Then the other handle, whose last seq is stale now.
      seqs.push((await (store === first ? second : first).audit.append(auditEntry("x"))).seq);
    }
    const listed = await allAuditSeqs(first);
    assert.equal(listed.length, 24);
    assert.deepEqual([...listed].sort((x, y) => x - y), listed.map((_, i) => i + 1));
    assert.ok(seqs.every((seq) => listed.includes(seq)));
    assert.equal(new Set(seqs).size, seqs.length);
  } finally {
    await close();
  }
});

Deno.test("kv store: two handles writing at the same time both succeed, the audit log without gap or repeat", async () => {
  // Each handle has its own SQLite connection; a commit that meets the other's write lock finds
  // the file busy and must wait, not fail the request.
  const { first, second, close } = await twoHandles();
  const writes = async (store: Store): Promise<number[]> => {
    const seqs: number[] = [];
    for (let i = 0; i < 120; i++) {
      if (i % 4 === 0) {
        const record = testPrincipal();
        assert.equal(await store.principals.create(record, undefined, auditEntry()), "created");
      } else {
        seqs.push((await store.audit.append(auditEntry())).seq);
      }
    }
    return seqs;
  };
  try {
    const seqs = (await Promise.all([writes(first), writes(second)])).flat();
    const listed = await allAuditSeqs(second);
    assert.equal(listed.length, 240);
    assert.deepEqual([...listed].sort((x, y) => x - y), listed.map((_, i) => i + 1));
    assert.equal(new Set(seqs).size, seqs.length);
  } finally {
    await close();
  }
});

/** A KV handle that counts the entries it reads (each key of a `get`, each entry of a `list`). */
function countingKv(kv: Deno.Kv): { kv: Deno.Kv; reads: () => number } {
  let reads = 0;
  const counted = new Proxy(kv, {
    get(target, property) {
      if (property === "get") {
        return (key: Deno.KvKey) => {
          reads++;
          return target.get(key);
        };
      }
      if (property === "getMany") {
        return (keys: Deno.KvKey[]) => {
          reads += keys.length;
          return target.getMany(keys);
        };
      }
      if (property === "list") {
        return async function* (selector: Deno.KvListSelector, options?: Deno.KvListOptions) {
          for await (const entry of target.list(selector, options)) {
            reads++;
            yield entry;
          }
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: counted, reads: () => reads };
}

/** Run entries and native events for `ids`. */
function eventBatch(runId: string, ids: string[]) {
  return {
    events: ids.map((id) => ({
      sourceId: id,
      at: "2026-01-01T00:00:00.000Z",
      event: { type: "message.completed" as const, runId, text: id },
    })),
    native: ids.map((id) => ({ id, type: "agent.message", json: `{"id":"${id}"}` })),
  };
}

Deno.test("kv store: an append to a log written with a key per id (the earlier index) skips the ids it holds, reading or not", async () => {
  const namespace = crypto.randomUUID().replaceAll("-", "");
  const root = ["automation-runtime", namespace];
  const runId = `sesn_${crypto.randomUUID()}`;
  const home = await Deno.makeTempDir({ prefix: "automation-runtime-kv-legacy-" });
  const path = `${home}/store.kv`;
  // p0 to p4 as the earlier layout wrote them: an index key per id, no chunk.
  const raw = await Deno.openKv(path);
  const old = raw.atomic();
  for (let i = 0; i < 5; i++) {
    const id = `p${i}`;
    const seq = i + 1;
    old.set([...root, "run-event", runId, seq], { seq, ...eventBatch(runId, [id]).events[0] })
      .set([...root, "run-event-source", runId, id], seq)
      .set([...root, "run-native", runId, seq, 0], {
        id,
        type: "agent.message",
        parts: 1,
        json: `{"id":"${id}"}`,
      })
      .set([...root, "run-native-source", runId, id], seq);
  }
  assert.equal(
    (await old.set([...root, "run-event-head", runId], { seq: 5, native: 5 }).commit()).ok,
    true,
  );
  raw.close();
  const store = await openKvStore({ path, namespace });
  try {
    const ids = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => `p${from + i}`);
    // The first append reads; the second goes the fast way (checking the earlier keys).
    const first = await store.events.appendBatch(runId, eventBatch(runId, ids(3, 8)));
    assert.deepEqual(first.events.map((e) => [e.seq, e.sourceId]), [[6, "p5"], [7, "p6"], [
      8,
      "p7",
    ]]);
    assert.deepEqual(first.native.map((e) => [e.seq, e.id]), [[6, "p5"], [7, "p6"], [8, "p7"]]);
    const second = await store.events.appendBatch(runId, eventBatch(runId, ids(0, 10)));
    assert.deepEqual(second.events.map((e) => e.sourceId), ["p8", "p9"]);
    assert.deepEqual(second.native.map((e) => e.seq), [9, 10]);
    const log = await store.events.list(runId, 0, 100);
    assert.deepEqual(log.map((e) => e.sourceId), ids(0, 10));
    const native = await store.events.listNative(runId, { order: "asc", limit: 100 });
    assert.deepEqual(native.map((e) => e.id), ids(0, 10));
    // An id too long for a key of the earlier index had none there: not looked up, on either way.
    // (A lone surrogate is written as U+FFFD, 3 bytes.)
    const long = "é".repeat(1_500);
    const lone = "\ud800".repeat(680);
    const third = await store.events.appendBatch(runId, eventBatch(runId, [long, lone]));
    assert.deepEqual(third.events.map((e) => e.seq), [11, 12]);
    const other = await openKvStore({ path, namespace });
    try {
      const batch = eventBatch(runId, ["p2", long, lone, "p10"]);
      const again = await other.events.appendBatch(runId, batch);
      assert.deepEqual(again.events.map((e) => [e.seq, e.sourceId]), [[13, "p10"]]);
      // More new ids than one commit can check: the append reads instead, and commits them all.
      const many = Array.from({ length: 150 }, (_, i) => `q${i}`);
      const more = await other.events.appendBatch(runId, eventBatch(runId, many));
      assert.deepEqual(more.events.map((e) => e.sourceId), many);
      // Read by page across the earlier layout (an entry a key) and packs, either way.
      await assertEveryPage(other, runId, 163);
    } finally {
      await other.close();
    }
  } finally {
    await store.close();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("kv store: what the events part knows of logs is bounded; a run it could not keep, or forgot, is read again and every id it holds still skipped", async () => {
  const raw = await Deno.openKv(":memory:");
  const counting = countingKv(raw);
  const root = ["automation-runtime", "ns"];
  let now = 0;
  // Room for two runs of 5 entries in both logs (512 bytes and 10 ids of 4 characters, 76 bytes
  // each), not 3.
  const events = new KvEvents(new KvCommits(counting.kv, auditNumbering(root)), root, {
    maxKnownBytes: 3_000,
    now: () => now,
  });
  const ids = (run: string, from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => `${run}${String(from + i).padStart(3, "0")}`);
  /**
   * Appends `run`'s ids `from` to `to` (`added` of them new), then the same again: whether each
   * read the store.
   */
  const append = async (runId: string, from: number, to: number, added: number) => {
    const batch = eventBatch(runId, ids(runId, from, to));
    const first = counting.reads();
    const appended = await events.appendBatch(runId, batch);
    const read = counting.reads() > first;
    assert.deepEqual(appended.events.map((e) => e.sourceId), ids(runId, to - added, to));
    assert.deepEqual(appended.native.map((e) => e.id), ids(runId, to - added, to));
    const before = counting.reads();
    assert.deepEqual(await events.appendBatch(runId, batch), { events: [], native: [] });
    return [read, counting.reads() > before];
  };
  try {
    // [whether the append read, whether the same again read]
    assert.deepEqual(await append("a", 0, 5, 5), [true, false], "a is kept");
    assert.deepEqual(await append("b", 0, 5, 5), [true, false], "b is kept");
    assert.deepEqual(await append("a", 3, 6, 1), [false, false], "a is known");
    const noRoom = "no room for c while a and b are in use";
    assert.deepEqual(await append("c", 0, 5, 5), [true, true], noRoom);
    assert.deepEqual(await append("c", 0, 5, 0), [true, true], noRoom);
    now += 60_000; // a and b idle
    assert.deepEqual(await append("c", 3, 5, 0), [true, false], "b, the least recent, made room");
    assert.deepEqual(await append("a", 0, 6, 0), [false, false], "a is still known");
    assert.deepEqual(await append("b", 0, 7, 2), [true, true], "b was forgotten; no room now");
    now += 60_000; // a and c idle
    assert.deepEqual(await append("d", 0, 30, 30), [true, true], "d is larger than the bound");
    assert.deepEqual(await append("d", 10, 40, 10), [true, true]);
    assert.deepEqual(await append("a", 0, 6, 0), [false, false], "d made nobody forgotten");
    for (const [runId, size] of [["a", 6], ["b", 7], ["c", 5], ["d", 40]] as const) {
      const log = await events.list(runId, 0, 100);
      assert.deepEqual(log.map((e) => e.sourceId), ids(runId, 0, size));
      assert.deepEqual(log.map((e) => e.seq), Array.from({ length: size }, (_, i) => i + 1));
    }
  } finally {
    raw.close();
  }
});

Deno.test("kv store: a replica that knows a run's ids reads them again when the log was purged and written anew, or appended to by an earlier version", async () => {
  const kv = await Deno.openKv(":memory:");
  const root = ["automation-runtime", "ns"];
  const replica = () => new KvEvents(new KvCommits(kv, auditNumbering(root)), root);
  const [a, b] = [replica(), replica()];
  const sources = async (runId: string) => (await a.list(runId, 0, 100)).map((e) => e.sourceId);
  try {
    // Purged and written anew up to the same head: b's memory of x is stale.
    const run = testRun({ state: "completed", endedAt: "2026-01-01T00:00:00.000Z" });
    await kv.set([...root, "run", run.runId], run);
    for (const id of ["x", "w", "v"]) {
      await b.appendBatch(run.runId, eventBatch(run.runId, [id]));
    }
    assert.ok(await a.purge("2026-02-01T00:00:00.000Z") >= 3);
    // Two commits: the new log passes the head b knows.
    await a.appendBatch(run.runId, eventBatch(run.runId, ["y"]));
    await a.appendBatch(run.runId, eventBatch(run.runId, ["z"]));
    assert.deepEqual((await b.appendBatch(run.runId, eventBatch(run.runId, ["y"]))).events, []);
    // A handle that knows nothing reads every chunk: none of the purged log is left.
    const v = await replica().appendBatch(run.runId, eventBatch(run.runId, ["v"]));
    assert.deepEqual(v.events.map((e) => [e.seq, e.sourceId]), [[3, "v"]]);
    const x = await b.appendBatch(run.runId, eventBatch(run.runId, ["x"]));
    assert.deepEqual(x.events.map((e) => [e.seq, e.sourceId]), [[4, "x"]]);
    assert.deepEqual(await sources(run.runId), ["y", "z", "v", "x"]);

    // A process of the earlier version appends "m" with an index key of its own, no chunk.
    const runId = "sesn_mixed";
    await b.appendBatch(runId, eventBatch(runId, ["l"]));
    const head = await kv.get([...root, "run-event-head", runId]);
    const old = await kv.atomic().check(head)
      .set([...root, "run-event", runId, 2], { seq: 2, ...eventBatch(runId, ["m"]).events[0] })
      .set([...root, "run-event-source", runId, "m"], 2)
      .set([...root, "run-event-head", runId], { seq: 2, native: 1 })
      .commit();
    assert.equal(old.ok, true);
    // Another handle appends after it (reading everything, it writes a chunk after the gap).
    await replica().appendBatch(runId, { events: eventBatch(runId, ["n"]).events });
    const m = await b.appendBatch(runId, { events: eventBatch(runId, ["m", "n", "o"]).events });
    assert.deepEqual(m.events.map((e) => [e.seq, e.sourceId]), [[4, "o"]]);
    assert.deepEqual(await sources(runId), ["l", "m", "n", "o"]);
  } finally {
    kv.close();
  }
});

Deno.test("kv store: a state-filtered run list reads the runs in that state, not every run", async () => {
  const raw = await Deno.openKv(":memory:");
  const counting = countingKv(raw);
  const root = ["automation-runtime", "ns"];
  const commits = new KvCommits(counting.kv, auditNumbering(root));
  const runs = new KvRuns(commits, root, Date.now, new KvActivityLog(commits, root));
  try {
    const principalId = crypto.randomUUID();
    const running: string[] = [];
    for (let i = 0; i < 300; i++) {
      const live = i % 100 === 0;
      const run = testRun({
        principalId,
        ...(live ? {} : { state: "completed", endedAt: "2026-01-02T00:00:00.000Z" }),
      }, i * 1000);
      await runs.create(run, `reservation:${i}`);
      if (live) running.unshift(run.runId);
    }
    for (
      const query of [{ state: "running" as const }, { state: "running" as const, principalId }]
    ) {
      const before = counting.reads();
      const page = await runs.list({ ...query, limit: 10 });
      assert.deepEqual(page.runs.map((run) => run.runId), running);
      assert.ok(counting.reads() - before <= 10, `${counting.reads() - before} reads`);
    }
  } finally {
    raw.close();
  }
});

Deno.test("kv store: runs written before the state index are indexed by the retention purge", async () => {
  const namespace = crypto.randomUUID().replaceAll("-", "");
  const dir = await Deno.makeTempDir();
  const file = `${dir}/old-runs.kv`;
  const principalId = crypto.randomUUID();
  const runsOf = [
    testRun({ principalId }, 0),
    testRun({ principalId, state: "failed", endedAt: "2026-01-05T00:00:00.000Z" }, 1000),
    testRun({ principalId, state: "completed", endedAt: "2026-03-01T00:00:00.000Z" }, 2000),
  ];
  // The keys an older build wrote: the record and its two orders, no state keys.
  const kv = await Deno.openKv(file);
  const root = ["automation-runtime", namespace];
  for (const run of runsOf) {
    await kv.atomic()
      .set([...root, "run", run.runId], run)
      .set([...root, "run-by-principal", principalId, run.createdAt, run.runId], true)
      .set([...root, "run-by-time", run.createdAt, run.runId], principalId)
      .commit();
  }
  kv.close();
  const store = await openKvStore({ path: file, namespace });
  try {
    const ids = async (state: StoredRunRecord["state"]) =>
      (await store.runs.list({ state, limit: 10 })).runs.map((run) => run.runId);
    // Before: the lists read every run, and find them all.
    assert.deepEqual(await ids("running"), [runsOf[0].runId]);
    assert.deepEqual(await ids("failed"), [runsOf[1].runId]);
    assert.equal(await store.runs.purgeEnded("2026-02-01T00:00:00.000Z"), 1);
    assert.equal(await store.runs.get(runsOf[1].runId), null);
    // After: served by the index, which holds every run that is left.
    assert.deepEqual(await ids("running"), [runsOf[0].runId]);
    assert.deepEqual(await ids("completed"), [runsOf[2].runId]);
    assert.deepEqual(await ids("failed"), []);
    const check = await Deno.openKv(file);
    try {
      assert.equal((await check.get([...root, "run-index-version"])).value, 1);
    } finally {
      check.close();
    }
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("kv store: a lease watcher wakes when another process revokes in the same file", async () => {
  // Deno KV's own watch does not cross processes; the change marker's poll does.
  const own = await Deno.makeTempDir({ prefix: "automation-runtime-watch-" });
  const file = `${own}/watch.kv`;
  const namespace = crypto.randomUUID().replaceAll("-", "");
  const store = await openKvStore({ path: file, namespace });
  const record = testPrincipal();
  assert.equal(await store.principals.create(record), "created");
  let wakes = 0;
  const stop = store.leases.watch(() => wakes++);
  try {
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(wakes, 0, "nothing committed: no wake-up");
    const script = `
      import { openKvStore } from ${
      JSON.stringify(new URL("../../server/store/kv/mod.ts", import.meta.url).href)
    };
      const store = await openKvStore({ path: Deno.args[0], namespace: Deno.args[1] });
      const result = await store.principals.revoke(Deno.args[2], new Date().toISOString());
      await store.close();
      if (result !== "revoked") Deno.exit(3);
    `;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--unstable-kv", script, file, namespace, record.principalId],
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    const deadline = Date.now() + 1_000;
    while (wakes === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.ok(wakes > 0, "the other process's revocation woke the watcher");
  } finally {
    stop();
    await store.close();
    await Deno.remove(own, { recursive: true });
  }
});

Deno.test("kv store: a lease watcher on a file is woken at once by other handles' commits and its own store's epoch moves and acknowledgements, never by its other commits", async () => {
  const own = await Deno.makeTempDir({ prefix: "automation-runtime-watch-own-" });
  const file = `${own}/own.kv`;
  const store = await openKvStore({ path: file, namespace: crypto.randomUUID() });
  // Another handle on the file: another process's commits, as a revocation's.
  const other = await Deno.openKv(file);
  const wakes: number[] = [];
  const stop = store.leases.watch(() => wakes.push(performance.now()));
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const runId = `sesn_${crypto.randomUUID()}`;
  let seq = 0;
  // One commit of the store's own, as a run's log takes for each provider event.
  const append = () =>
    store.events.appendBatch(runId, {
      events: [{
        sourceId: `sevt_${++seq}`,
        at: new Date().toISOString(),
        event: { type: "message.completed", runId, text: `m${seq}` },
      }],
    });
  // A wake-up after `at`, within `ms`. (While the store's own commits run back to back the
  // watcher may wake once more than needed: a spare read, allowed; a missing one is not.)
  const wokenWithin = async (at: number, ms: number): Promise<void> => {
    while (!wakes.some((time) => time >= at) && performance.now() - at < 1_000) await sleep(2);
    const first = wakes.find((time) => time >= at);
    assert.ok(first !== undefined, "not woken");
    assert.ok(first - at < ms, `woken ${(first - at).toFixed(0)} ms after`);
  };
  try {
    await sleep(30);
    // A lease acknowledging the epoch, then renewed: the first wakes (a waiter counts on it).
    const { epoch } = await store.authority.readState();
    let at = performance.now();
    await store.leases.renew({ holder: "h", leaseMs: 5_000, now: Date.now(), epoch });
    await wokenWithin(at, 100);
    await sleep(30);
    const before = wakes.length;
    await store.leases.renew({ holder: "h", leaseMs: 5_000, now: Date.now(), epoch });
    // The store's own commits, 5 ms apart for 300 ms: about fifty, and nobody is woken (one
    // spare wake-up is allowed, should one commit stay under way for two polls on a busy machine).
    let commits = 0;
    const started = performance.now();
    while (performance.now() - started < 300) {
      await append();
      commits++;
      await sleep(5);
    }
    await sleep(40);
    assert.ok(commits >= 10, `${commits} commits`);
    assert.ok(wakes.length - before <= 1, `its own commits woke it ${wakes.length - before} times`);
    // Its own revocation (the epoch moves) wakes it: another server may share the store.
    const principal = testPrincipal();
    assert.equal(await store.principals.create(principal), "created");
    await sleep(30);
    at = performance.now();
    await store.principals.revoke(principal.principalId, new Date().toISOString());
    await wokenWithin(at, 100);
    // Another handle's commit wakes it within a poll or two.
    await sleep(30);
    at = performance.now();
    await other.set(["revocation", 1], 1);
    await wokenWithin(at, 100);
    // Its own commit and another's together: woken for the other's.
    await sleep(30);
    at = performance.now();
    await Promise.all([append(), other.set(["revocation", 2], 2)]);
    await wokenWithin(at, 100);
    // Another's commit in the middle of the store's own appends back to back: woken for it.
    await sleep(30);
    const burst = (async () => {
      const end = performance.now() + 150;
      while (performance.now() < end) await append();
    })();
    await sleep(40);
    at = performance.now();
    await other.set(["revocation", 3], 3);
    await wokenWithin(at, 150);
    await burst;
  } finally {
    stop();
    other.close();
    await store.close();
    await Deno.remove(own, { recursive: true });
  }
});

Deno.test("kv store: a lease renewal whose read a revocation overtakes reads again and returns the new epoch", async () => {
  const own = await Deno.makeTempDir({ prefix: "automation-runtime-overtake-" });
  const file = `${own}/overtake.kv`;
  const namespace = crypto.randomUUID().replaceAll("-", "");
  const store = await openKvStore({ path: file, namespace });
  const other = await openKvStore({ path: file, namespace });
  const record = testPrincipal();
  assert.equal(await store.principals.create(record), "created");
  const before = await store.authority.readState();
  // Another handle revokes right after the renewal read the authority state, before it commits.
  const getMany = Deno.Kv.prototype.getMany;
  let overtake: (() => Promise<unknown>) | null = () =>
    other.principals.revoke(record.principalId, new Date().toISOString());
  Deno.Kv.prototype.getMany = async function (this: Deno.Kv, ...args: Parameters<typeof getMany>) {
    const entries = await getMany.apply(this, args);
    const step = overtake;
    overtake = null;
    await step?.();
    return entries;
  } as typeof getMany;
  try {
    const holder = crypto.randomUUID();
    const state = await store.leases.renew({
      holder,
      epoch: before.epoch,
      leaseMs: 3_000,
      now: Date.now(),
    });
    assert.equal(overtake, null, "the revocation ran inside the renewal");
    const after = await store.authority.readState();
    assert.ok(after.epoch > before.epoch);
    assert.equal(state.epoch, after.epoch, "the renewal returned the epoch of the revocation");
    await store.leases.release(holder);
  } finally {
    Deno.Kv.prototype.getMany = getMany;
    await other.close();
    await store.close();
    await Deno.remove(own, { recursive: true });
  }
});

Deno.test("kv store: a batch whose keys are long (a long run id) is split into commits KV takes, without gap or repeat", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: crypto.randomUUID() });
  try {
    const runId = `sesn_${"x".repeat(900)}`;
    const ids = Array.from({ length: 300 }, (_, i) => `sevt_${i}`);
    const appended = await store.events.appendBatch(runId, eventBatch(runId, ids));
    assert.equal(appended.events.length + appended.native.length, 600);
    const log = await store.events.list(runId, 0, 1_000);
    assert.deepEqual(log.map((e) => e.sourceId), ids);
    assert.deepEqual(log.map((e) => e.seq), Array.from({ length: 300 }, (_, i) => i + 1));
    const native = await store.events.listNative(runId, { order: "asc", limit: 1_000 });
    assert.deepEqual(native.map((e) => e.id), ids);
  } finally {
    await store.close();
  }
});

Deno.test("kv store: an append cut off between its commits is finished by the next one, without gap or repeat", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: crypto.randomUUID() });
  const runId = `sesn_${crypto.randomUUID()}`;
  const batch = {
    events: Array.from({ length: 600 }, (_, i) => ({
      sourceId: `sevt_${i}`,
      at: new Date().toISOString(),
      event: { type: "message.completed" as const, runId, text: `m${i}` },
    })),
    native: Array.from({ length: 600 }, (_, i) => ({
      id: `sevt_${i}`,
      type: "agent.message",
      json: JSON.stringify({ type: "agent.message", id: `sevt_${i}` }),
    })),
  };
  // The second commit of the batch fails: the file went away, the process stopped.
  const commit = Deno.AtomicOperation.prototype.commit;
  let commits = 0;
  Deno.AtomicOperation.prototype.commit = function (this: Deno.AtomicOperation) {
    if (++commits === 2) return Promise.reject(new Error("cut off"));
    return commit.call(this);
  };
  try {
    await assert.rejects(store.events.appendBatch(runId, batch));
  } finally {
    Deno.AtomicOperation.prototype.commit = commit;
  }
  try {
    const partial = await store.events.list(runId, 0, 1_000);
    assert.ok(partial.length > 0 && partial.length < 600, "the batch took several commits");
    const rest = await store.events.appendBatch(runId, batch);
    assert.equal(rest.events.length + partial.length, 600, "only what was missing is appended");
    const events = await store.events.list(runId, 0, 1_000);
    const native = await store.events.listNative(runId, { order: "asc", limit: 1_000 });
    assert.deepEqual(events.map((e) => e.seq), Array.from({ length: 600 }, (_, i) => i + 1));
    assert.deepEqual(events.map((e) => e.sourceId), batch.events.map((e) => e.sourceId));
    assert.deepEqual(native.map((e) => e.seq), Array.from({ length: 600 }, (_, i) => i + 1));
    assert.deepEqual(native.map((e) => e.id), batch.native.map((e) => e.id));
  } finally {
    await store.close();
  }
});

Deno.test("kv store: a page read down the native log reads no part of an entry it does not return", async () => {
  const raw = await Deno.openKv(":memory:");
  const counting = countingKv(raw);
  const root = ["automation-runtime", "ns"];
  const events = new KvEvents(new KvCommits(counting.kv, auditNumbering(root)), root);
  const runId = `sesn_${crypto.randomUUID()}`;
  // 13 parts, then a small event.
  const big = { id: "big", type: "agent.message", json: `{"text":"${"x".repeat(300_000)}"}` };
  const small = { id: "small", type: "agent.message", json: "{}" };
  try {
    await events.appendBatch(runId, { events: [], native: [big, small] });
    const reads = counting.reads();
    const newest = await events.listNative(runId, { order: "desc", limit: 1 });
    assert.deepEqual(newest.map((entry) => entry.id), ["small"]);
    assert.ok(counting.reads() - reads <= 2, `${counting.reads() - reads} rows read`);
    const next = await events.listNative(runId, { order: "desc", before: 2, limit: 1 });
    assert.equal(next[0].json, big.json);
  } finally {
    raw.close();
  }
});

Deno.test("kv store: a page read while a purge takes the log's rows returns whole entries only, and a full page reads no row past it", async () => {
  const raw = await Deno.openKv(":memory:");
  const root = ["automation-runtime", "ns"];
  // Once the read has yielded the row `when` picks, another process's purge commits (between two
  // batches of the read), deleting the rows `gone` picks.
  let purge: { when: (key: Deno.KvKey) => boolean; gone: (key: Deno.KvKey) => boolean } | null =
    null;
  let read = 0;
  const kv = new Proxy(raw, {
    get(target, property) {
      if (property === "list") {
        return async function* (selector: Deno.KvListSelector, options?: Deno.KvListOptions) {
          for await (const entry of target.list(selector, options)) {
            read++;
            yield entry;
            if (purge?.when(entry.key)) {
              const { gone } = purge;
              purge = null;
              const operation = target.atomic();
              for await (const row of target.list({ prefix: root })) {
                if (gone(row.key)) operation.delete(row.key);
              }
              await operation.commit();
            }
          }
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const events = new KvEvents(new KvCommits(kv, auditNumbering(root)), root);
  const runId = `sesn_${crypto.randomUUID()}`;
  // Run events: "a", then two replies of 4 pieces each (seqs 2 and 3); native events: two of 4
  // parts each (seqs 1 and 2). (Four: an entry in more parts keeps only its first in the log's
  // rows, the spilled entries' test below.)
  const texts = ["a", "x".repeat(90_000), "y".repeat(90_000)];
  const batch = {
    ...eventBatch(runId, ["a", "x", "y"]),
    native: ["p", "q"].map((fill) => ({
      id: fill,
      type: "agent.message",
      json: `{"text":"${fill.repeat(80_000)}"}`,
    })),
  };
  batch.events.forEach((event, i) => event.event.text = texts[i]);
  const place = (key: Deno.KvKey) => [key.at(-2), key.at(-1)];
  const run = (key: Deno.KvKey) => key.includes(runId);
  try {
    await events.appendBatch(runId, batch);
    // A full page reads no row past it.
    read = 0;
    assert.deepEqual((await events.list(runId, 0, 1)).map((e) => e.sourceId), ["a"]);
    assert.equal(read, 1);
    // Run events, 3 rows a batch: the purge takes "a" and the first reply, and the second's
    // head, after the first reply's first piece was read.
    purge = {
      when: (key) => key.includes("run-event") && place(key).join() === "2,1",
      gone: (key) =>
        run(key) && key.includes("run-event") &&
        (typeof key.at(-2) !== "number" ? key.at(-1) !== 3 : key.at(-2) === 2),
    };
    assert.deepEqual((await events.list(runId, 0, 3)).map((e) => e.sourceId), ["a"]);
    // Native events up, 3 rows a batch: the purge takes the first event and the second's first
    // part after the first event's part 1 was read.
    purge = {
      when: (key) => key.includes("run-native") && place(key).join() === "1,1",
      gone: (key) => key.includes("run-native") && (key.at(-2) === 1 || key.at(-1) === 0),
    };
    assert.deepEqual(await events.listNative(runId, { order: "asc", limit: 2 }), []);
    // Native events down: the purge takes the second event after its part 2 was read.
    await events.appendBatch(`${runId}-2`, { events: [], native: batch.native });
    purge = {
      when: (key) => key.includes("run-native") && place(key).join() === "2,2",
      gone: (key) => key.includes("run-native") && key.at(-2) === 2,
    };
    assert.deepEqual(
      await events.listNative(`${runId}-2`, { order: "desc", limit: 2 }),
      [],
    );
  } finally {
    raw.close();
  }
});

Deno.test("kv store: an entry longer than one commit holds keeps one part in the log's rows and the rest under spill keys; a page ends before it when a part is gone, and the purge takes them all", async () => {
  const kv = await Deno.openKv(":memory:");
  const root = ["automation-runtime", "ns"];
  const events = new KvEvents(new KvCommits(kv, auditNumbering(root)), root);
  const run = testRun({ state: "completed", endedAt: "2026-01-01T00:00:00.000Z" });
  const runId = run.runId;
  const rows = async (part: string) => {
    const found: Deno.KvEntry<unknown>[] = [];
    for await (const row of kv.list({ prefix: [...root, part, runId] })) found.push(row);
    return found;
  };
  try {
    await kv.set([...root, "run", runId], run);
    const batch = eventBatch(runId, ["a", "big", "c"]);
    batch.events[1].event.text = "x".repeat(900_000);
    batch.native[1].json = `{"id":"big","text":"${"y".repeat(900_000)}"}`;
    await events.appendBatch(runId, batch);
    // Each log keeps the long entry's first part in its rows (no further part there); its other
    // 37 parts (24,000 characters each) are under one spill token per log.
    assert.equal((await rows("run-event")).length, 3);
    assert.deepEqual((await rows("run-native")).map((row) => row.key.slice(-2)), [
      [1, 0],
      [2, 0],
      [3, 0],
    ]);
    const spilled = await rows("run-spill");
    const tokens = [...new Set(spilled.map((row) => row.key.at(-2)))];
    assert.equal(tokens.length, 2);
    assert.equal(spilled.length, 2 * 37);
    assert.equal(
      ((await events.list(runId, 0, 10))[1].event as { text: string }).text,
      batch.events[1].event.text,
    );
    // A part gone (never written, or a purge under way): each log's pages end before the entry,
    // and no page holds a cut one.
    for (const token of tokens) {
      await kv.delete(
        spilled.find((row) => row.key.at(-2) === token && row.key.at(-1) === 20)!.key,
      );
    }
    assert.deepEqual((await events.list(runId, 0, 10)).map((e) => e.sourceId), ["a"]);
    assert.deepEqual(
      (await events.listNative(runId, { order: "asc", limit: 10 })).map((e) => e.id),
      ["a"],
    );
    assert.deepEqual(
      (await events.listNative(runId, { order: "desc", limit: 10 })).map((e) => e.id),
      ["c"],
    );
    // The retention purge takes the spilled parts with the logs.
    await events.purge("2026-02-01T00:00:00.000Z");
    assert.deepEqual(await rows("run-spill"), []);
    assert.deepEqual(await rows("run-event"), []);
  } finally {
    kv.close();
  }
});

Deno.test("kv store: an append of a long entry whose commit fails, again and again, leaves one copy of its spilled pieces, which the append that lands uses", async () => {
  const raw = await Deno.openKv(":memory:");
  const root = ["automation-runtime", "ns"];
  // The commits that move a log's head fail while `failing` is above 0.
  let failing = 3;
  const kv = new Proxy(raw, {
    get(target, property) {
      if (property === "atomic") {
        return () => {
          const operation = target.atomic();
          let head = false;
          const wrapped: Deno.AtomicOperation = new Proxy(operation, {
            get(op, name) {
              if (name === "commit") {
                return () =>
                  head && failing-- > 0
                    ? Promise.reject(new Error("injected: the commit failed"))
                    : op.commit();
              }
              const value = Reflect.get(op, name, op);
              if (typeof value !== "function") return value;
              return (...args: unknown[]) => {
                if (name === "set") head ||= (args[0] as Deno.KvKey).includes("run-event-head");
                const result = value.apply(op, args);
                return result === op ? wrapped : result;
              };
            },
          });
          return wrapped;
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const events = new KvEvents(new KvCommits(kv, auditNumbering(root)), root);
  const runId = `sesn_${crypto.randomUUID()}`;
  const batch = eventBatch(runId, ["big"]);
  batch.native[0].json = `{"id":"big","text":"${"中".repeat(300_000)}"}`;
  batch.events[0].event.text = "x".repeat(300_000);
  try {
    for (let i = 0; i < 3; i++) await assert.rejects(events.appendBatch(runId, batch));
    const appended = await events.appendBatch(runId, batch);
    assert.deepEqual([appended.events.length, appended.native.length], [1, 1]);
    let spilled = 0;
    for await (const _ of raw.list({ prefix: [...root, "run-spill", runId] })) spilled++;
    // Two entries of 13 pieces each: 12 spilled pieces each, written once.
    assert.equal(spilled, 2 * 12);
    assert.equal(
      (await events.listNative(runId, { order: "asc", limit: 1 }))[0].json,
      batch.native[0].json,
    );
    assert.equal(
      ((await events.list(runId, 0, 1))[0].event as { text: string }).text,
      batch.events[0].event.text,
    );
  } finally {
    raw.close();
  }
});
