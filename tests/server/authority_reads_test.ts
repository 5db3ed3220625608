/**
 * The authenticator's authority state: without a lease, a request never uses a read that was
 * already running when it arrived (it may predate a revocation the request must see), and the
 * requests that arrive during one read share the next. With a lease, a cached principal is
 * answered with no store call at all; a revocation is answered only once every lease holder
 * acknowledged it, or its lease lapsed; a lease that cannot be renewed stops being used.
 */
import assert from "node:assert/strict";
import { Authenticator, bearerDigest } from "../../server/authenticator.ts";
import { claimAuthority } from "../../server/authority_lease.ts";
import { bootstrapClaim, deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import type { InterfaceError } from "../../server/errors.ts";
import { openKvStore, wrapStore } from "../../server/store/mod.ts";
import {
  type AuthorityState,
  type PrincipalRecord,
  type Store,
  StoreUnavailableError,
} from "../../server/store/types.ts";
import { testPrincipal } from "../store/contract.ts";

/** A bootstrap credential whose token repeats `letter`, and a principal it issued with `bearer`. */
function fixture(letter: string, bearer: string) {
  const bootstrap = deriveBootstrapCredential({
    token: "art_" + letter.repeat(43),
    principalId: crypto.randomUUID(),
    capabilities: ["session:read", "authority:admin"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    source: "environment",
  });
  const record: PrincipalRecord = {
    principalId: crypto.randomUUID(),
    bearerDigest: bearerDigest(bearer),
    capabilities: ["session:read"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    issuerId: bootstrap.principalId,
    createdAt: new Date().toISOString(),
    revokedAt: null,
    nonce: "n",
  };
  return { bootstrap, record };
}

Deno.test("without a lease, a request waits for an authority read that started after it arrived; waiting requests share one", async () => {
  const bearer = "art_" + "p".repeat(43);
  const { bootstrap, record } = fixture("b", bearer);
  const kv = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  await kv.principals.create(record);
  const reads: PromiseWithResolvers<AuthorityState>[] = [];
  const store: Store = wrapStore(kv, (part, method, call) => {
    if (part === "authority" && method === "readState") {
      return () => {
        const read = Promise.withResolvers<AuthorityState>();
        reads.push(read);
        return read.promise;
      };
    }
    return call;
  });
  const authenticator = new Authenticator({ bootstrap, store, leaseMs: 0 });
  const header = `Bearer ${bearer}`;
  const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
  try {
    // Warm the cache under epoch "e1".
    const first = authenticator.authenticate(header, Date.now());
    assert.equal(reads.length, 1);
    reads[0].resolve({ current: true, epoch: "e1", bootstrapGeneration: 0 });
    assert.equal((await first).principalId, record.principalId);

    // A request arrives and its read starts ...
    const before = authenticator.authenticate(header, Date.now());
    assert.equal(reads.length, 2);
    // ... then the principal is revoked elsewhere, and three more requests arrive.
    await kv.principals.revoke(record.principalId, new Date().toISOString());
    const after = [1, 2, 3].map(() =>
      Promise.resolve(authenticator.authenticate(header, Date.now()))
    );
    await tick();
    assert.equal(reads.length, 2, "no request of the three joins the read already running");
    // The running read answers with the old epoch: only the request that started it uses it.
    reads[1].resolve({ current: true, epoch: "e1", bootstrapGeneration: 0 });
    assert.equal((await before).principalId, record.principalId);
    await tick();
    assert.equal(reads.length, 3, "the three share one later read");
    reads[2].resolve({ current: true, epoch: "e2", bootstrapGeneration: 0 });
    // All three handled at once: one awaited after another, a later one could reject first,
    // unhandled, and fail the whole file.
    await Promise.all(
      after.map((request) =>
        assert.rejects(request, (error: InterfaceError) => error.code === "authenticationFailed")
      ),
    );
    assert.equal(reads.length, 3);
    // A claim by another bootstrap refuses every bearer, this process's bootstrap included.
    const superseded = Promise.resolve(
      authenticator.authenticate(`Bearer ${"art_" + "b".repeat(43)}`, Date.now()),
    );
    reads[3].resolve({ current: false, epoch: "e3", bootstrapGeneration: 0 });
    await assert.rejects(superseded, /newer bootstrap/);
  } finally {
    await kv.close();
  }
});

/** Two authenticators ("processes") on one KV file with one bootstrap, each with its own handle. */
async function twoProcesses(options: { leaseMs?: number } = {}) {
  const bearer = "art_" + "q".repeat(43);
  const { bootstrap, record } = fixture("c", bearer);
  const directory = await Deno.makeTempDir({ prefix: "authority-lease-" });
  const path = `${directory}/store.kv`;
  const storeA = await openKvStore({ path, namespace: bootstrap.namespace });
  const storeB = await openKvStore({ path, namespace: bootstrap.namespace });
  await claimAuthority(storeA, Date.now());
  await storeA.principals.create(record);
  // B's store calls, counted; its authority reads take 150 ms (a slow round trip), so that B
  // acknowledges a change well after it was committed.
  const calls: string[] = [];
  const countedB: Store = wrapStore(storeB, (part, method, call) => (...args) => {
    calls.push(`${part}.${method}`);
    if (method !== "readState") return call(...args);
    return new Promise((resolve) => setTimeout(resolve, 150)).then(() => call(...args));
  });
  const leaseMs = options.leaseMs ?? 3_000;
  const a = new Authenticator({ bootstrap, store: storeA, leaseMs });
  const b = new Authenticator({ bootstrap, store: countedB, leaseMs });
  return {
    bootstrap,
    record,
    path,
    header: `Bearer ${bearer}`,
    storeA,
    a,
    b,
    calls,
    async close() {
      await a.close();
      await b.close();
      await storeA.close();
      await storeB.close();
      await Deno.remove(directory, { recursive: true });
    },
  };
}

/** Waits until `authenticator` answers `header` synchronously (its lease is held). */
async function untilLeased(authenticator: Authenticator, header: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (true) {
    const answer = authenticator.authenticate(header, Date.now());
    if (!(answer instanceof Promise)) return;
    await answer;
    assert.ok(Date.now() < deadline, "the lease was never held");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function refused(attempt: () => unknown): Promise<void> {
  return assert.rejects(
    async () => await attempt(),
    (error: InterfaceError) => error.code === "authenticationFailed",
  );
}

Deno.test("holding a lease, a cached principal is answered with no store call; a revocation elsewhere is answered once this process acknowledged it", async () => {
  const t = await twoProcesses();
  try {
    await untilLeased(t.b, t.header);
    await untilLeased(t.a, t.header);
    t.calls.length = 0;
    for (let i = 0; i < 100; i++) {
      const answer = t.b.authenticate(t.header, Date.now());
      assert.ok(!(answer instanceof Promise), "answered synchronously");
      assert.equal(answer.principalId, t.record.principalId);
    }
    assert.equal(t.calls.join(), "", "no store call while the lease is held");

    // A revokes, then waits for every lease: B's included.
    const started = performance.now();
    assert.equal(
      await t.storeA.principals.revoke(t.record.principalId, new Date().toISOString()),
      "revoked",
    );
    assert.equal(await t.a.settle(), true);
    const waited = performance.now() - started;
    assert.ok(
      waited < 1_000,
      `B acknowledged at once when woken, not at its lease's end: ${waited}`,
    );
    assert.ok(t.calls.includes("leases.renew"), "B acknowledged with a renewal");
    // The very next request on B is refused, and so is every one after it.
    for (let i = 0; i < 3; i++) await refused(() => t.b.authenticate(t.header, Date.now()));
    await refused(() => t.a.authenticate(t.header, Date.now()));
  } finally {
    await t.close();
  }
});

Deno.test("a revocation waits for a lease that is not acknowledged until it lapses, and no longer; a dead record not at all", async () => {
  const t = await twoProcesses();
  try {
    await untilLeased(t.a, t.header);
    const { epoch } = await t.storeA.authority.readState();
    // A holder that never answers again (a frozen process): its last renewal, just now.
    await t.storeA.leases.renew({
      holder: "frozen",
      epoch,
      leaseMs: 800,
      now: Date.now(),
    });
    // One whose holder died long ago: renewed 20 s before now.
    await t.storeA.leases.renew({
      holder: "gone",
      epoch,
      leaseMs: 800,
      now: Date.now() - 20_000,
    });
    await t.storeA.principals.revoke(t.record.principalId, new Date().toISOString());
    const started = performance.now();
    assert.equal(await t.a.settle(), true);
    const waited = performance.now() - started;
    assert.ok(waited >= 700 && waited < 1_500, `waited for the frozen lease: ${waited} ms`);
    const holders = (await t.storeA.leases.list({ now: Date.now(), graceMs: 60_000 }))
      .map((lease) => lease.holder);
    assert.ok(!holders.includes("gone"), "the dead record was deleted");

    // With a deadline before the lease's end, the wait stops unfinished.
    const second = testPrincipal();
    await t.storeA.principals.create(second);
    await t.storeA.leases.renew({ holder: "frozen", epoch, leaseMs: 2_000, now: Date.now() });
    await t.storeA.principals.revoke(second.principalId, new Date().toISOString());
    const before = performance.now();
    assert.equal(await t.a.settle({ deadline: Date.now() + 200 }), false);
    const stopped = performance.now() - before;
    assert.ok(stopped >= 150 && stopped < 1_000, `stopped at the deadline: ${stopped} ms`);
    await t.storeA.leases.release("frozen");
  } finally {
    await t.close();
  }
});

Deno.test("a lease that cannot be renewed is not used once it lapses: requests read the store, and fail closed without it", async () => {
  const bearer = "art_" + "r".repeat(43);
  const { bootstrap, record } = fixture("d", bearer);
  const kv = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  await kv.principals.create(record);
  let storeDown = false;
  const store: Store = wrapStore(kv, (_part, method, call) => (...args) => {
    if (storeDown && method !== "watch") {
      return Promise.reject(new StoreUnavailableError("store down (test)"));
    }
    return call(...args);
  });
  const authenticator = new Authenticator({ bootstrap, store, leaseMs: 300 });
  const header = `Bearer ${bearer}`;
  try {
    await untilLeased(authenticator, header);
    storeDown = true;
    // Within the lease the cached principal is still answered from memory.
    const held = authenticator.authenticate(header, Date.now());
    assert.ok(!(held instanceof Promise));
    // 300 ms lease, 270 ms of it usable from the renewal's start.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const lapsed = authenticator.authenticate(header, Date.now());
    assert.ok(lapsed instanceof Promise, "the lapsed lease is not used: the request reads");
    await assert.rejects(lapsed, StoreUnavailableError);
    // The store back: the next request reads it, and the lease is held again soon after.
    storeDown = false;
    assert.equal(
      (await authenticator.authenticate(header, Date.now())).principalId,
      record.principalId,
    );
    await untilLeased(authenticator, header);
  } finally {
    await authenticator.close();
    await kv.close();
  }
});

Deno.test("a claim by a new bootstrap waits for the old bootstrap's leases; they refuse every bearer from then on", async () => {
  const t = await twoProcesses();
  try {
    await untilLeased(t.b, t.header);
    await untilLeased(t.b, `Bearer ${"art_" + "c".repeat(43)}`);
    // Another process, started with a rotated bootstrap, claims the file.
    const rotated = fixture("e", "art_" + "s".repeat(43));
    const next = await openKvStore({ path: t.path, namespace: rotated.bootstrap.namespace });
    try {
      await claimAuthority(next, Date.now());
      for (const header of [t.header, `Bearer ${"art_" + "c".repeat(43)}`]) {
        assert.throws(() => t.b.authenticate(header, Date.now()), /newer bootstrap/);
      }
    } finally {
      await next.close();
    }
  } finally {
    await t.close();
  }
});

Deno.test("a process that was frozen past its lease does not answer from memory on its first request, before any timer of its own ran", async () => {
  const t = await twoProcesses({ leaseMs: 600 });
  try {
    await untilLeased(t.b, t.header);
    // A wall clock past the lease (a machine that was suspended stops its monotonic clock, not
    // its wall clock) is enough to stop answering from memory.
    const suspended = t.b.authenticate(t.header, Date.now() + 5_000);
    assert.ok(suspended instanceof Promise, "the wall clock said the lease had lapsed");
    assert.equal((await suspended).principalId, t.record.principalId);
    await untilLeased(t.b, t.header);
    // Another process revokes, and B is frozen before it could hear of it: this thread does not
    // run a timer or an I/O callback until the loop below ends.
    await t.storeA.principals.revoke(t.record.principalId, new Date().toISOString());
    const until = performance.now() + 700;
    while (performance.now() < until) {
      // Frozen (as under SIGSTOP).
    }
    let first: unknown;
    try {
      first = t.b.authenticate(t.header, Date.now());
    } catch (error) {
      first = error;
    }
    assert.ok(first instanceof Promise, "the lapsed lease sent the request to the store");
    await refused(() => first);
  } finally {
    await t.close();
  }
});

Deno.test("a claim by a later bootstrap generation waits for the leases; they refuse the old bootstrap bearer from then on and keep the principals", async () => {
  const bearer = "art_" + "t".repeat(43);
  const authorityKey = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  const credential = (token: string, generation: number) =>
    deriveBootstrapCredential({
      token,
      principalId: crypto.randomUUID(),
      capabilities: ["session:read", "authority:admin"],
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
      source: "environment",
      authorityKey,
      generation,
    });
  const old = credential("art_" + "g".repeat(43), 1);
  const next = credential("art_" + "h".repeat(43), 2);
  assert.equal(old.namespace, next.namespace);
  const directory = await Deno.makeTempDir({ prefix: "authority-rotation-" });
  const path = `${directory}/store.kv`;
  const storeB = await openKvStore({ path, namespace: old.namespace });
  const storeNext = await openKvStore({ path, namespace: next.namespace });
  await claimAuthority(storeB, Date.now(), bootstrapClaim(old));
  const record: PrincipalRecord = { ...fixture("g", bearer).record };
  await storeB.principals.create(record);
  const b = new Authenticator({ bootstrap: old, store: storeB });
  const oldHeader = `Bearer ${"art_" + "g".repeat(43)}`;
  try {
    await untilLeased(b, oldHeader);
    await untilLeased(b, `Bearer ${bearer}`);
    await claimAuthority(storeNext, Date.now(), bootstrapClaim(next));
    // B acknowledged the rotation before the claim returned: its old bootstrap bearer is refused
    // at once, from memory; the principals it issued stay valid.
    assert.throws(() => b.authenticate(oldHeader, Date.now()), /rotated away/);
    assert.equal(
      (await b.authenticate(`Bearer ${bearer}`, Date.now())).principalId,
      record.principalId,
    );
  } finally {
    await b.close();
    await storeB.close();
    await storeNext.close();
    await Deno.remove(directory, { recursive: true });
  }
});
