import assert from "node:assert/strict";
import { openKvStore } from "../../server/store/kv.ts";
import { openStore, StoreLocationError } from "../../server/store/mod.ts";
import { runStoreContract, testPrincipal } from "./contract.ts";

const directory = Deno.makeTempDirSync({ prefix: "automation-runtime-kv-" });
const path = `${directory}/store.kv`;

runStoreContract("kv", (namespace) => openKvStore({ path, namespace }));

Deno.test("kv store: records survive closing and reopening the file", async () => {
  const namespace = crypto.randomUUID().replaceAll("-", "");
  const record = testPrincipal();
  const first = await openKvStore({ path, namespace });
  try {
    assert.equal(await first.createPrincipal(record), "created");
  } finally {
    await first.close();
  }
  const second = await openKvStore({ path, namespace });
  try {
    assert.deepEqual(await second.getPrincipal(record.principalId), record);
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
