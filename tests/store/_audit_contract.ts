/**
 * The audit part of the store contract: entries get increasing seqs (also when appended at once
 * over two handles, as two replicas) and list newest first, filtered, in pages. Registered by
 * `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { auditInput, type ContractCase, twinOf } from "./_fixtures.ts";

/** Registers the audit cases. */
export function runAuditContract(test: ContractCase): void {
  test("audit: entries get increasing seqs and list newest first, filtered, in pages", async (store) => {
    const alice = crypto.randomUUID();
    const bob = crypto.randomUUID();
    const appended = [];
    appended.push(
      await store.audit.append(
        auditInput({ action: "principal.issued", actorId: alice, subjectId: bob }),
      ),
    );
    appended.push(await store.audit.append(auditInput({ actorId: bob, runId: "sesn_1" })));
    appended.push(
      await store.audit.append(
        auditInput({
          action: "run.cancelled",
          actorId: alice,
          runId: "sesn_1",
          outcome: "providerError",
        }),
      ),
    );
    assert.ok(appended[0].seq < appended[1].seq && appended[1].seq < appended[2].seq);
    const all = await store.audit.list({ limit: 10 });
    assert.deepEqual(all.entries, [...appended].reverse());
    assert.equal(all.nextCursor, null);
    const first = await store.audit.list({ limit: 2 });
    assert.deepEqual(first.entries, [appended[2], appended[1]]);
    const second = await store.audit.list({ limit: 2, cursor: first.nextCursor! });
    assert.deepEqual(second.entries, [appended[0]]);
    const byBob = await store.audit.list({ limit: 10, principalId: bob });
    assert.deepEqual(byBob.entries, [appended[1], appended[0]]);
    const cancels = await store.audit.list({ limit: 10, action: "run.cancelled" });
    assert.deepEqual(cancels.entries, [appended[2]]);
  });

  test("audit: concurrent appends get distinct seqs", async (store, openTwin) => {
    const twin = await twinOf(store, openTwin);
    try {
      const entries = await Promise.all(
        Array.from(
          { length: 20 },
          (_, i) => (i % 2 === 0 ? store : twin).audit.append(auditInput()),
        ),
      );
      assert.equal(new Set(entries.map((entry) => entry.seq)).size, 20);
      assert.equal((await store.audit.list({ limit: 100 })).entries.length, 20);
    } finally {
      await twin.close();
    }
  });
}
