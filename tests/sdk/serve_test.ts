import assert from "node:assert/strict";
import { RuntimeServiceClient, RuntimeServiceError } from "../../sdk/mod.ts";
import { startServer } from "../support/server.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BEARER = /^art_[A-Za-z0-9_-]{43}$/;

async function rejectsWith(promise: Promise<unknown>, status: number, code: string) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof RuntimeServiceError, String(error));
    assert.equal(error.status, status, error.message);
    assert.equal(error.code, code, error.message);
    assert.match(error.correlationId, UUID);
    assert.ok(error.message.length > 0 && !error.message.includes("\n"));
    return true;
  });
}

Deno.test("the SDK issues, uses, lists, replays and revokes principals on the real service", async () => {
  const server = await startServer();
  try {
    const admin = new RuntimeServiceClient({ baseUrl: server.url, token: server.bearer });
    assert.deepEqual(await admin.health(), { ok: true });
    const self = await admin.runtime();
    assert.equal(self.principalId, server.bootstrap.principalId);
    assert.equal(self.interfaceVersion, "2026-07-23");

    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const principalId = crypto.randomUUID();
    const params = { principalId, capabilities: ["session:read"] as const, expiresAt };
    const issued = await admin.createPrincipal(
      { ...params, capabilities: [...params.capabilities] },
      { idempotencyKey: "sdk-issue-1" },
    );
    assert.equal(issued.principalId, principalId);
    assert.deepEqual(issued.capabilities, ["session:read"]);
    assert.equal(Date.parse(issued.expiresAt), Date.parse(expiresAt));
    assert.match(issued.bearer, BEARER);

    const replay = await admin.createPrincipal(
      { ...params, capabilities: [...params.capabilities] },
      { idempotencyKey: "sdk-issue-1" },
    );
    assert.deepEqual(replay, issued, "same key and body: the identical answer, bearer included");
    await rejectsWith(
      admin.createPrincipal(
        { ...params, capabilities: ["session:write"] },
        { idempotencyKey: "sdk-issue-1" },
      ),
      422,
      "idempotencyConflict",
    );
    await rejectsWith(
      admin.createPrincipal({ ...params, capabilities: ["session:read"] }),
      409,
      "principalExists",
    );

    const scoped = new RuntimeServiceClient({ baseUrl: server.url, token: issued.bearer });
    const scopedSelf = await scoped.runtime();
    assert.equal(scopedSelf.principalId, principalId);
    assert.deepEqual(scopedSelf.capabilities, ["session:read"]);
    await assert.rejects(scoped.listPrincipals(), (error: unknown) => {
      assert.ok(error instanceof RuntimeServiceError);
      assert.equal(error.status, 403);
      assert.equal(error.code, "missingCapability");
      assert.equal(error.details.requiredCapability, "authority:admin");
      return true;
    });

    const listed = await admin.listPrincipals();
    const entry = listed.find((principal) => principal.principalId === principalId);
    assert.ok(entry !== undefined);
    assert.equal(entry.revokedAt, undefined);
    assert.ok(!JSON.stringify(listed).includes(issued.bearer), "no bearer in the list");

    await admin.revokePrincipal(principalId);
    await rejectsWith(scoped.runtime(), 401, "authenticationFailed");
    await admin.revokePrincipal(principalId); // revoking again succeeds
    const after = await admin.listPrincipals();
    assert.ok(after.find((principal) => principal.principalId === principalId)?.revokedAt);

    await rejectsWith(admin.revokePrincipal(crypto.randomUUID()), 404, "notFound");
    await rejectsWith(admin.revokePrincipal(server.bootstrap.principalId), 422, "invalidRequest");
    const stranger = new RuntimeServiceClient({
      baseUrl: server.url,
      token: "art_" + "n".repeat(43),
    });
    await rejectsWith(stranger.runtime(), 401, "authenticationFailed");
  } finally {
    await server.stop();
  }
});

Deno.test("the SDK retries a connection failure until the service comes up", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  let failures = 0;
  const sdk = new RuntimeServiceClient({
    baseUrl: `http://127.0.0.1:${port}`,
    token: "art_" + "w".repeat(43),
    maxRetries: 10,
    deadlineMs: 60_000,
    fetch: async (input, init) => {
      try {
        return await fetch(input, init);
      } catch (error) {
        failures++;
        throw error;
      }
    },
  });
  // Nothing listens yet: the first attempts fail to connect; the server starts meanwhile.
  const call = sdk.health();
  const server = await startServer({ args: ["--port", String(port)] });
  try {
    assert.deepEqual(await call, { ok: true });
    assert.ok(failures >= 1, "at least one attempt failed to connect and was retried");
  } finally {
    await server.stop();
  }
});
