/**
 * The authenticator's authority reads: a request never uses a read that was already running when
 * it arrived (it may predate a revocation the request must see), and the requests that arrive
 * during one read share the next.
 */
import assert from "node:assert/strict";
import { Authenticator, bearerDigest } from "../../server/authenticator.ts";
import { deriveBootstrapCredential } from "../../server/bootstrap/credential.ts";
import type { InterfaceError } from "../../server/errors.ts";
import { openKvStore } from "../../server/store/kv.ts";
import type { AuthorityState, PrincipalRecord, Store } from "../../server/store/types.ts";

Deno.test("a request waits for an authority read that started after it arrived; waiting requests share one", async () => {
  const bootstrap = deriveBootstrapCredential({
    token: "art_" + "b".repeat(43),
    principalId: crypto.randomUUID(),
    capabilities: ["session:read", "authority:admin"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    source: "environment",
  });
  const kv = await openKvStore({ path: ":memory:", namespace: bootstrap.namespace });
  const bearer = "art_" + "p".repeat(43);
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
  await kv.createPrincipal(record);
  const reads: PromiseWithResolvers<AuthorityState>[] = [];
  const store = new Proxy(kv, {
    get(target, property) {
      if (property === "readAuthorityState") {
        return () => {
          const read = Promise.withResolvers<AuthorityState>();
          reads.push(read);
          return read.promise;
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as Store;
  const authenticator = new Authenticator({ bootstrap, store });
  const header = `Bearer ${bearer}`;
  const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
  try {
    // Warm the cache under epoch "e1".
    const first = authenticator.authenticate(header, Date.now());
    assert.equal(reads.length, 1);
    reads[0].resolve({ current: true, epoch: "e1" });
    assert.equal((await first).principalId, record.principalId);

    // A request arrives and its read starts ...
    const before = authenticator.authenticate(header, Date.now());
    assert.equal(reads.length, 2);
    // ... then the principal is revoked elsewhere, and three more requests arrive.
    await kv.revokePrincipal(record.principalId, new Date().toISOString());
    const after = [1, 2, 3].map(() => authenticator.authenticate(header, Date.now()));
    await tick();
    assert.equal(reads.length, 2, "no request of the three joins the read already running");
    // The running read answers with the old epoch: only the request that started it uses it.
    reads[1].resolve({ current: true, epoch: "e1" });
    assert.equal((await before).principalId, record.principalId);
    await tick();
    assert.equal(reads.length, 3, "the three share one later read");
    reads[2].resolve({ current: true, epoch: "e2" });
    for (const request of after) {
      await assert.rejects(request, (error: InterfaceError) => {
        return error.code === "authenticationFailed";
      });
    }
    assert.equal(reads.length, 3);
    // A claim by another bootstrap refuses every bearer, this process's bootstrap included.
    const superseded = authenticator.authenticate(`Bearer ${"art_" + "b".repeat(43)}`, Date.now());
    reads[3].resolve({ current: false, epoch: "e3" });
    await assert.rejects(superseded, /newer bootstrap/);
  } finally {
    await kv.close();
  }
});
