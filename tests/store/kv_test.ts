import assert from "node:assert/strict";
import { openKvStore, openStore, type Store, StoreLocationError } from "../../server/store/mod.ts";
import type { AuditEntryInput } from "../../server/store/run_types.ts";
import { runStoreContract, testPrincipal } from "./contract.ts";

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
  await assert.rejects(
    () => openStore({ location: "mysql://user:hunter2@db/x", namespace: "0".repeat(32) }),
    (error: unknown) => {
      assert.ok(error instanceof StoreLocationError);
      assert.ok(!error.message.includes("hunter2"));
      return true;
    },
  );
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
  try {
    await store.principals.get(crypto.randomUUID());
    let before = store.authority.changeMarker();
    assert.equal(typeof before, "number");
    // 4 KiB a commit: 1,500 commits pass SQLite's automatic checkpoint (1,000 pages) several
    // times, so the WAL restarts from its start while the marker is being read.
    const value = "x".repeat(4096);
    let unchangedReads = 0;
    for (let i = 0; i < 1500; i++) {
      await other.set(["filler", i % 50], value);
      const after = store.authority.changeMarker();
      // Null is allowed (it means "read the store"); equal to the value before the commit is not.
      assert.notEqual(after, before, `commit ${i} left the marker at ${before}`);
      if (after !== null && after === store.authority.changeMarker()) unchangedReads++;
      before = after;
    }
    assert.ok(unchangedReads > 1400, "with no commit in between, the marker holds");
  } finally {
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
