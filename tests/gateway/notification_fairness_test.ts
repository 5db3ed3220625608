/**
 * Notification fairness: an owner whose subscriptions all point at a tarpit (a receiver that
 * holds every request, as a target answering after 9.9 s or never does) holds at most two of a
 * replica's sending slots, however many subscriptions it makes, and also when it deletes and
 * re-creates them while the tarpit holds their attempts; another owner's delivery, created while
 * the tarpit holds those attempts, arrives at once. Once the tarpit answers, every held delivery
 * goes out.
 *
 * @module
 */
import assert from "node:assert/strict";
import { OWNER_IN_FLIGHT } from "../../server/notifications/sender.ts";
import { type Gateway, waitFor } from "./_harness.ts";
import { gatewayWith, receiver, subscribe, subscribedRun } from "./_notifications.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** What a tarpit test works with. */
interface Tarpit {
  gateway: Gateway;
  /** The receiver that holds every request until {@linkcode Tarpit.release}. */
  requests: readonly unknown[];
  release: () => void;
  /** Subscribes the tarpit owner `count` times to the tarpit, then starts one run. */
  subscribedRun: (count: number) => Promise<string[]>;
  /** Deletes a subscription of the tarpit owner. */
  deleteSubscription: (subscriptionId: string) => Promise<void>;
  /** The tarpit owner's deliveries of a subscription, newest first. */
  deliveries: (subscriptionId: string) => Promise<Json[]>;
  /** Another owner subscribes a healthy receiver and starts a run: its delivery comes at once. */
  assertHealthyPrompt: () => Promise<void>;
}

/** Runs `body` with a gateway, a tarpit owner and its tarpit, and a healthy receiver. */
async function withTarpit(body: (tarpit: Tarpit) => Promise<void>): Promise<void> {
  const gateway = await gatewayWith();
  let release = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  const tarpit = receiver(async () => {
    await released;
    return 204;
  });
  const healthy = receiver();
  try {
    const slow = await gateway.issue(["session:read", "session:write"]);
    await body({
      gateway,
      requests: tarpit.requests,
      release,
      async subscribedRun(count) {
        const made: string[] = [];
        for (let i = 0; i < count; i++) {
          const body = { url: tarpit.url, events: ["run.completed"] };
          made.push((await subscribe(gateway, slow.bearer, body)).subscriptionId);
        }
        const started = await gateway.request("POST", "/v1/runs", {
          bearer: slow.bearer,
          body: { input: "go" },
        });
        assert.equal(started.status, 201, started.text);
        return made;
      },
      async deleteSubscription(subscriptionId) {
        const path = `/v1/webhook-subscriptions/${subscriptionId}`;
        const deleted = await gateway.request("DELETE", path, { bearer: slow.bearer });
        assert.equal(deleted.status, 204, deleted.text);
      },
      async deliveries(subscriptionId) {
        const path = `/v1/webhook-subscriptions/${subscriptionId}`;
        const listed = await gateway.request("GET", `${path}/deliveries`, { bearer: slow.bearer });
        assert.equal(listed.status, 200, listed.text);
        return listed.json.deliveries;
      },
      async assertHealthyPrompt() {
        const quick = await gateway.issue(["session:read", "session:write"]);
        const began = performance.now();
        await subscribedRun(gateway, quick.bearer, healthy.url);
        const arrived = await waitFor(() => healthy.requests[0], 8_000);
        const waited = arrived.at - began;
        assert.ok(waited < 4_000, `the healthy owner's delivery took ${Math.round(waited)} ms`);
        assert.equal(JSON.parse(arrived.body).type, "run.completed");
        assert.equal(tarpit.requests.length, OWNER_IN_FLIGHT, "the tarpit owner's attempts");
      },
    });
  } finally {
    release();
    await gateway.close();
    await tarpit.close();
    await healthy.close();
  }
}

Deno.test("notifications: a tarpit owner holds two sending slots at most; another owner's delivery arrives at once", async () => {
  await withTarpit(async (tarpit) => {
    // Six deliveries due, one per subscription: the tarpit holds the owner's first attempts.
    const subscriptions = await tarpit.subscribedRun(6);
    await waitFor(() => tarpit.requests.length >= OWNER_IN_FLIGHT ? true : undefined);
    await tarpit.assertHealthyPrompt();

    // The tarpit answers: the held deliveries, and the rest, all go out.
    tarpit.release();
    for (const subscriptionId of subscriptions) {
      await waitFor(async () =>
        (await tarpit.deliveries(subscriptionId))[0]?.state === "delivered" ? true : undefined
      );
    }
    assert.equal(tarpit.requests.length, subscriptions.length);
  });
});

Deno.test("notifications: a tarpit owner that deletes and re-creates its subscriptions mid-attempt still holds two sending slots at most", async () => {
  await withTarpit(async (tarpit) => {
    const held = await tarpit.subscribedRun(OWNER_IN_FLIGHT);
    await waitFor(() => tarpit.requests.length === OWNER_IN_FLIGHT ? true : undefined);
    // Its subscriptions go while the tarpit holds their attempts; new ones get new deliveries,
    // due at once, which wait for the owner's attempts in flight.
    for (const subscriptionId of held) await tarpit.deleteSubscription(subscriptionId);
    const again = await tarpit.subscribedRun(OWNER_IN_FLIGHT);
    for (const subscriptionId of again) {
      await waitFor(async () => (await tarpit.deliveries(subscriptionId)).length > 0 || undefined);
    }
    await tarpit.assertHealthyPrompt();

    // The tarpit answers: the new subscriptions' deliveries go out.
    tarpit.release();
    await waitFor(() => tarpit.requests.length === 2 * OWNER_IN_FLIGHT ? true : undefined);
    for (const subscriptionId of again) {
      assert.equal((await tarpit.deliveries(subscriptionId)).length, 1);
    }
  });
});
