/**
 * The guard against the postgres.js 3.4.9 null-socket crash: a write deferred on a connection
 * whose socket is gone throws from a timer, which would end the process. With a PostgreSQL store
 * open, the process survives it and the store keeps serving. The crash is triggered for real,
 * through the driver's own reserved-connection path (porsager/postgres#1208).
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import {
  driverCrashesCaught,
  isDriverSocketReset,
  isDriverWriteCrash,
} from "../../server/store/postgres/_driver_guard.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { testPrincipal } from "./contract.ts";

Deno.test("postgres driver guard recognises only the null-socket write crash", () => {
  let crash: unknown;
  try {
    const socket = null as unknown as { write(): void };
    socket.write();
  } catch (error) {
    crash = error;
  }
  // Same message, but thrown here rather than from the driver's nextWrite.
  assert.equal(isDriverWriteCrash(crash), false);
  assert.equal(
    isDriverWriteCrash(new Error("Cannot read properties of null (reading 'write')")),
    false,
  );
  const driverLike = new TypeError("Cannot read properties of null (reading 'write')");
  driverLike.stack =
    `TypeError: ${driverLike.message}\n    at nextWrite (file:///cache/npm/postgres/3.4.9/src/connection.js:255:22)`;
  assert.equal(isDriverWriteCrash(driverLike), true);
});

Deno.test("postgres driver guard recognises only a reset socket's error from the socket layer", () => {
  const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
  reset.stack = `Error: read ECONNRESET\n    at TCPWrap.onStreamRead [as onread] ` +
    `(ext:deno_node/internal/stream_base_commons.ts:1:3690)`;
  assert.equal(isDriverSocketReset(reset), true);
  const pipe = Object.assign(new Error("write EPIPE"), { code: "EPIPE", stack: reset.stack });
  assert.equal(isDriverSocketReset(pipe), true);
  // The same code thrown by other code, or another code from the socket layer: left alone.
  assert.equal(
    isDriverSocketReset(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" })),
    false,
  );
  assert.equal(
    isDriverSocketReset(Object.assign(new Error("x"), { code: "ENOENT", stack: reset.stack })),
    false,
  );
  assert.equal(isDriverSocketReset("ECONNRESET"), false);
});

Deno.test({
  name:
    `postgres: the driver's null-socket crash is caught and the store keeps serving${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const store = await openPostgresStore({ url: db.url, namespace: "a".repeat(32) });
    const raw = postgres(db.url, { max: 1, onnotice: () => {} });
    const admin = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const principal = testPrincipal();
      assert.equal(await store.principals.create(principal), "created");

      const before = driverCrashesCaught();
      const reserved = await raw.reserve();
      const [{ pid }] = await reserved<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      await admin`SELECT pg_terminate_backend(${pid})`;
      // Let the driver see the socket close, then write on the dead reserved connection.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const stuck = reserved`SELECT 1`.then(() => "answered", (error) => error.code);
      for (let waited = 0; driverCrashesCaught() === before && waited < 5_000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(driverCrashesCaught(), before + 1, "the driver crash did not happen");

      assert.deepEqual(await store.principals.findByDigest(principal.bearerDigest), principal);
      reserved.release();
      await raw.end({ timeout: 0 });
      assert.equal(await stuck, "CONNECTION_DESTROYED");
    } finally {
      await raw.end({ timeout: 0 });
      await admin.end();
      await store.close();
    }
  },
});
