/**
 * The authenticator's authority reads: a request never uses a read that was already running when
 * it arrived (it may predate a revocation the request must see), and the requests that arrive
 * during one read share the next.
 */
import assert from "node:assert/strict";
import { Authenticator, bearerDigest } from "../../server/authenticator.ts";
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import type { InterfaceError } from "../../server/errors.ts";
import { openKvStore, wrapStore } from "../../server/store/mod.ts";
import type { AuthorityState, PrincipalRecord, Store } from "../../server/store/types.ts";

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

Deno.test("a request waits for an authority read that started after it arrived; waiting requests share one", async () => {
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
  const authenticator = new Authenticator({ bootstrap, store });
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

Deno.test("on a Deno KV file, nothing committed means no authority read; another process's revocation is seen by the next request", async () => {
  const bearer = "art_" + "q".repeat(43);
  const { bootstrap, record } = fixture("c", bearer);
  const directory = await Deno.makeTempDir({ prefix: "authority-marker-" });
  const path = `${directory}/store.kv`;
  const kv = await openKvStore({ path, namespace: bootstrap.namespace });
  await kv.authority.claim(Date.now());
  await kv.principals.create(record);
  let reads = 0;
  const store: Store = wrapStore(kv, (part, method, call) => {
    if (part !== "authority" || method !== "readState") return call;
    return () => {
      reads++;
      return call();
    };
  });
  const authenticator = new Authenticator({ bootstrap, store });
  const header = `Bearer ${bearer}`;
  try {
    assert.equal(
      (await authenticator.authenticate(header, Date.now())).principalId,
      record.principalId,
    );
    assert.equal(reads, 1);
    // Nothing committed since that read began: answered at once, from memory.
    for (let i = 0; i < 100; i++) {
      const answer = authenticator.authenticate(header, Date.now());
      assert.ok(!(answer instanceof Promise), "a cached principal is answered synchronously");
      assert.equal(answer.principalId, record.principalId);
    }
    assert.equal(reads, 1);

    // Another process revokes the principal in the same file.
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
      args: [
        "eval",
        "--unstable-kv",
        script,
        path,
        bootstrap.namespace,
        record.principalId,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));

    const next = authenticator.authenticate(header, Date.now());
    assert.ok(next instanceof Promise, "the marker moved: the request waits for a read");
    await assert.rejects(next, (error: InterfaceError) => error.code === "authenticationFailed");
    assert.equal(reads, 2);
    // The refusal holds with no further authority read while nothing else is committed (the
    // principal itself is read again: refusals are not cached).
    await assert.rejects(
      Promise.resolve(authenticator.authenticate(header, Date.now())),
      (error: InterfaceError) => error.code === "authenticationFailed",
    );
    assert.equal(reads, 2);
  } finally {
    await kv.close();
    await Deno.remove(directory, { recursive: true });
  }
});
