import assert from "node:assert/strict";
import { type McpSessionHandle, McpSessionRegistry } from "../../server/mcp/sessions.ts";

interface FakeSession extends McpSessionHandle {
  closed: number;
}

function fakeSession(
  registry: McpSessionRegistry<FakeSession>,
  id: string,
  principalId: string,
  expiresAtMs = Number.MAX_SAFE_INTEGER,
): FakeSession {
  const session: FakeSession = {
    id,
    principalId,
    expiresAtMs,
    closed: 0,
    close() {
      session.closed++;
      registry.delete(id);
      return Promise.resolve();
    },
  };
  const reservation = registry.reserve(principalId);
  assert.equal(typeof reservation, "object");
  if (typeof reservation !== "string") reservation.commit(session);
  return session;
}

Deno.test("a session is found only by the principal that created it", async () => {
  const registry = new McpSessionRegistry<FakeSession>();
  try {
    const session = fakeSession(registry, "s1", "alice");
    assert.equal(registry.lookup("s1", "alice"), session);
    assert.equal(registry.lookup("s1", "bob"), undefined);
    assert.equal(registry.lookup("s2", "alice"), undefined);
  } finally {
    await registry.close();
  }
});

Deno.test("session quotas count reservations per principal and in total", async () => {
  const registry = new McpSessionRegistry<FakeSession>({
    maxSessions: 3,
    maxSessionsPerPrincipal: 2,
  });
  try {
    fakeSession(registry, "a1", "alice");
    const pending = registry.reserve("alice");
    assert.equal(typeof pending, "object");
    assert.equal(registry.reserve("alice"), "principalFull");
    fakeSession(registry, "b1", "bob");
    assert.equal(registry.reserve("carol"), "serverFull");
    if (typeof pending !== "string") pending.cancel();
    assert.equal(typeof registry.reserve("carol"), "object");
  } finally {
    await registry.close();
  }
});

Deno.test("deleting a session gives its room back", async () => {
  const registry = new McpSessionRegistry<FakeSession>({ maxSessionsPerPrincipal: 1 });
  try {
    fakeSession(registry, "a1", "alice");
    assert.equal(registry.reserve("alice"), "principalFull");
    assert.equal(registry.delete("a1"), true);
    assert.equal(registry.size, 0);
    fakeSession(registry, "a2", "alice");
  } finally {
    await registry.close();
  }
});

Deno.test("the sweep closes idle sessions but not busy ones", async () => {
  let now = 1_000_000;
  const registry = new McpSessionRegistry<FakeSession>({ idleTimeoutMs: 1000, now: () => now });
  try {
    const idle = fakeSession(registry, "idle", "alice");
    const busy = fakeSession(registry, "busy", "alice");
    const release = registry.hold("busy");
    now += 999;
    await registry.sweep();
    assert.equal(idle.closed, 0);
    now += 1;
    await registry.sweep();
    assert.equal(idle.closed, 1);
    assert.equal(registry.lookup("idle", "alice"), undefined);
    assert.equal(busy.closed, 0, "an open stream is not idleness");
    release();
    now += 999;
    await registry.sweep();
    assert.equal(busy.closed, 0, "idleness counts from the end of the last activity");
    now += 1;
    await registry.sweep();
    assert.equal(busy.closed, 1);
  } finally {
    await registry.close();
  }
});

Deno.test("the sweep closes sessions of expired and revoked principals", async () => {
  let now = 1_000_000;
  const revoked = new Set<string>();
  const registry = new McpSessionRegistry<FakeSession>({
    now: () => now,
    isPrincipalValid: (principalId) => Promise.resolve(!revoked.has(principalId)),
  });
  try {
    const expiring = fakeSession(registry, "e", "erin", now + 10);
    const alice = fakeSession(registry, "a", "alice");
    const release = registry.hold("a");
    const bob = fakeSession(registry, "b", "bob");
    now += 10;
    revoked.add("alice");
    await registry.sweep();
    assert.equal(expiring.closed, 1);
    assert.equal(alice.closed, 1, "a revoked principal's open stream ends too");
    assert.equal(bob.closed, 0);
    release();
  } finally {
    await registry.close();
  }
});

Deno.test("a failing validity check keeps the sessions", async () => {
  const registry = new McpSessionRegistry<FakeSession>({
    isPrincipalValid: () => Promise.reject(new Error("store down")),
  });
  try {
    const session = fakeSession(registry, "a", "alice");
    await registry.sweep();
    assert.equal(session.closed, 0);
  } finally {
    await registry.close();
  }
});

Deno.test("closePrincipal and close end sessions; a closed registry refuses new ones", async () => {
  const registry = new McpSessionRegistry<FakeSession>();
  const a1 = fakeSession(registry, "a1", "alice");
  const a2 = fakeSession(registry, "a2", "alice");
  const b1 = fakeSession(registry, "b1", "bob");
  assert.equal(await registry.closePrincipal("alice"), 2);
  assert.deepEqual([a1.closed, a2.closed, b1.closed], [1, 1, 0]);
  await registry.close();
  assert.equal(b1.closed, 1);
  assert.equal(registry.size, 0);
  assert.equal(registry.reserve("alice"), "closed");
});

Deno.test("the sweep timer runs on its own and stops with the last session", async () => {
  const registry = new McpSessionRegistry<FakeSession>({
    idleTimeoutMs: 20,
    sweepIntervalMs: 10,
  });
  try {
    const session = fakeSession(registry, "s", "alice");
    const deadline = Date.now() + 2000;
    while (session.closed === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(session.closed, 1);
    assert.equal(registry.size, 0);
  } finally {
    await registry.close();
  }
});

Deno.test("invalid limits are refused at construction", () => {
  assert.throws(() => new McpSessionRegistry({ idleTimeoutMs: 0 }), RangeError);
  assert.throws(() => new McpSessionRegistry({ maxSessionsPerPrincipal: -1 }), RangeError);
});

Deno.test("a session committed after close is ended, not kept", async () => {
  const registry = new McpSessionRegistry<McpSessionHandle>();
  const reservation = registry.reserve("alice");
  await registry.close();
  let closed = 0;
  if (typeof reservation !== "string") {
    reservation.commit({
      id: "late",
      principalId: "alice",
      expiresAtMs: Number.MAX_SAFE_INTEGER,
      close: () => {
        closed++;
        return Promise.resolve();
      },
    });
  }
  assert.equal(closed, 1);
  assert.equal(registry.size, 0);
});
