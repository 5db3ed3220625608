import assert from "node:assert/strict";
import { startServer } from "./support/server.ts";

Deno.test("GET /healthz through the real serve answers 200 {ok: true} without any header", async () => {
  const server = await startServer();
  try {
    const response = await fetch(`${server.url}/healthz`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.equal(response.headers.get("x-content-type-options"), "nosniff");
    assert.deepEqual(await response.json(), { ok: true });

    const head = await fetch(`${server.url}/healthz`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
  } finally {
    assert.equal(await server.stop(), 0);
  }
});
