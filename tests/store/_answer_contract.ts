/**
 * The tool-answer part of the store contract: a claim is won once (also by twenty callers at
 * once over two handles, as two replicas), completed or released only with its token, a stale
 * claim is handed over with the old claim, and webhook delivery ids are recorded once.
 * Registered by `runStoreContract` in `contract.ts`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ToolAnswerClaimParams } from "../../server/store/types.ts";
import { type ContractCase, twinOf } from "./_fixtures.ts";

function claimParams(overrides: Partial<ToolAnswerClaimParams> = {}): ToolAnswerClaimParams {
  return {
    runId: `sesn_${crypto.randomUUID().replaceAll("-", "")}`,
    toolUseId: `sevt_${crypto.randomUUID().replaceAll("-", "")}`,
    kind: "confirmation",
    principalId: crypto.randomUUID(),
    result: "allow",
    now: Date.now(),
    staleMs: 30_000,
    ...overrides,
  };
}

/** Registers the tool-answer and webhook-id cases. */
export function runAnswerContract(test: ContractCase): void {
  test("answers: a claim is won once, completed with its token, then taken", async (store) => {
    const params = claimParams();
    const first = await store.answers.claim(params);
    assert.equal(first.state, "claimed");
    assert.ok(first.state === "claimed" && first.recovered === undefined);
    const token = first.state === "claimed" ? first.token : "";
    const second = await store.answers.claim({ ...params, principalId: crypto.randomUUID() });
    assert.equal(second.state, "taken");
    assert.equal(second.state === "taken" && second.record.principalId, params.principalId);
    assert.equal(second.state === "taken" && second.record.state, "claimed");
    assert.equal(
      await store.answers.complete(params.runId, params.toolUseId, "wrong", {
        principalId: params.principalId,
        result: "allow",
        answeredAt: new Date().toISOString(),
      }),
      false,
    );
    const answeredAt = new Date().toISOString();
    assert.equal(
      await store.answers.complete(params.runId, params.toolUseId, token, {
        principalId: params.principalId,
        result: "deny",
        answeredAt,
      }),
      true,
    );
    const record = await store.answers.get(params.runId, params.toolUseId);
    assert.equal(record?.state, "answered");
    assert.equal(record?.result, "deny");
    assert.equal(record?.answeredAt, answeredAt);
    assert.equal(record?.kind, "confirmation");
    // An answered record is never handed over, however old.
    const late = await store.answers.claim({ ...params, now: params.now + 3_600_000 });
    assert.equal(late.state, "taken");
    assert.equal(late.state === "taken" && late.record.state, "answered");
    assert.deepEqual(
      (await store.answers.list(params.runId)).map((r) => r.toolUseId),
      [params.toolUseId],
    );
    assert.equal(await store.answers.get(params.runId, "sevt_none"), null);
  });

  test("answers: a released claim can be claimed again; a wrong token releases nothing", async (store) => {
    const params = claimParams({ kind: "custom_tool", result: "ok" });
    const first = await store.answers.claim(params);
    assert.equal(first.state, "claimed");
    await store.answers.release(params.runId, params.toolUseId, "wrong");
    assert.equal((await store.answers.claim(params)).state, "taken");
    await store.answers.release(
      params.runId,
      params.toolUseId,
      first.state === "claimed" ? first.token : "",
    );
    assert.equal(await store.answers.get(params.runId, params.toolUseId), null);
    const again = await store.answers.claim(params);
    assert.equal(again.state, "claimed");
    assert.ok(again.state === "claimed" && again.recovered === undefined);
  });

  test("answers: a stale claim is handed over with the old claim; the old token is void", async (store) => {
    const params = claimParams();
    const first = await store.answers.claim(params);
    const oldToken = first.state === "claimed" ? first.token : "";
    // Still fresh 29 s later.
    assert.equal(
      (await store.answers.claim({ ...params, now: params.now + 29_000 })).state,
      "taken",
    );
    const rescuer = crypto.randomUUID();
    const taken = await store.answers.claim({
      ...params,
      principalId: rescuer,
      result: "deny",
      now: params.now + 31_000,
    });
    assert.equal(taken.state, "claimed");
    assert.equal(taken.state === "claimed" && taken.recovered?.principalId, params.principalId);
    assert.equal(taken.state === "claimed" && taken.recovered?.token, oldToken);
    const final = { principalId: params.principalId, result: "allow" as const, answeredAt: "t" };
    assert.equal(
      await store.answers.complete(params.runId, params.toolUseId, oldToken, final),
      false,
    );
    assert.equal(
      await store.answers.complete(
        params.runId,
        params.toolUseId,
        taken.state === "claimed" ? taken.token : "",
        final,
      ),
      true,
    );
    const record = await store.answers.get(params.runId, params.toolUseId);
    assert.equal(record?.principalId, params.principalId);
    assert.equal(record?.result, "allow");
  });

  test(
    "answers: twenty claims at once over two handles: exactly one wins",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const params = claimParams();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            (i % 2 === 0 ? store : twin).answers.claim({
              ...params,
              principalId: crypto.randomUUID(),
            })),
        );
        assert.equal(results.filter((r) => r.state === "claimed").length, 1);
        assert.equal(results.filter((r) => r.state === "taken").length, 19);
      } finally {
        await twin.close();
      }
    },
  );

  test(
    "webhooks: a delivery id is new once, a repeat is not, a lapsed one is new again",
    async (store, openTwin) => {
      const twin = await twinOf(store, openTwin);
      try {
        const id = `msg_${crypto.randomUUID()}`;
        const now = Date.now();
        const ttl = 7 * 86_400_000;
        const first = await Promise.all([
          store.answers.recordWebhookDelivery(id, now, ttl),
          twin.answers.recordWebhookDelivery(id, now, ttl),
        ]);
        assert.deepEqual(first.sort(), [false, true]);
        assert.equal(await store.answers.recordWebhookDelivery(id, now + 1000, ttl), false);
        assert.equal(await store.answers.recordWebhookDelivery(`${id}-other`, now, ttl), true);
        assert.equal(await store.answers.recordWebhookDelivery(id, now + ttl + 1, ttl), true);
      } finally {
        await twin.close();
      }
    },
  );
}
