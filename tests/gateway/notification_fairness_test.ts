/**
 * Notification fairness: an owner whose subscriptions all point at a tarpit (a receiver that
 * holds every request, as a target answering after 9.9 s or never does) holds at most two of a
 * replica's sending slots, however many subscriptions it makes; another owner's delivery, created
 * while the tarpit holds those attempts, arrives at once. Once the tarpit answers, every held
 * delivery goes out.
 *
 * @module
 */
import assert from "node:assert/strict";
import { OWNER_IN_FLIGHT } from "../../server/notifications/sender.ts";
import { waitFor } from "./_harness.ts";
import { gatewayWith, receiver, subscribe, subscribedRun } from "./_notifications.ts";

Deno.test("notifications: a tarpit owner holds two sending slots at most; another owner's delivery arrives at once", async () => {
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
    const subscriptions: string[] = [];
    for (let i = 0; i < 6; i++) {
      const made = await subscribe(gateway, slow.bearer, {
        url: tarpit.url,
        events: ["run.completed"],
      });
      subscriptions.push(made.subscriptionId);
    }
    const started = await gateway.request("POST", "/v1/runs", {
      bearer: slow.bearer,
      body: { input: "go" },
    });
    assert.equal(started.status, 201, started.text);
    // The tarpit holds the owner's first attempts (six deliveries due, one per subscription).
    await waitFor(() => tarpit.requests.length >= OWNER_IN_FLIGHT ? true : undefined);

    const quick = await gateway.issue(["session:read", "session:write"]);
    const began = performance.now();
    await subscribedRun(gateway, quick.bearer, healthy.url);
    const arrived = await waitFor(() => healthy.requests[0], 8_000);
    const waited = arrived.at - began;
    assert.ok(waited < 4_000, `the healthy owner's delivery took ${Math.round(waited)} ms`);
    assert.equal(JSON.parse(arrived.body).type, "run.completed");
    assert.equal(tarpit.requests.length, OWNER_IN_FLIGHT, "the tarpit owner's attempts at once");

    // The tarpit answers: the held deliveries, and the rest, all go out.
    release();
    for (const subscriptionId of subscriptions) {
      await waitFor(async () => {
        const listed = await gateway.request(
          "GET",
          `/v1/webhook-subscriptions/${subscriptionId}/deliveries`,
          { bearer: slow.bearer },
        );
        return listed.json.deliveries[0]?.state === "delivered" ? true : undefined;
      });
    }
    assert.equal(tarpit.requests.length, subscriptions.length);
  } finally {
    release();
    await gateway.close();
    await tarpit.close();
    await healthy.close();
  }
});

Deno.test("notifications: a tarpit owner that deletes and re-creates its subscriptions mid-attempt still holds two sending slots at most", async () => {
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
    // OWNER_IN_FLIGHT subscriptions to the tarpit, then a run: one delivery each.
    const subscribedTwice = async (): Promise<string[]> => {
      const made: string[] = [];
      for (let i = 0; i < OWNER_IN_FLIGHT; i++) {
        const body = { url: tarpit.url, events: ["run.completed"] };
        made.push((await subscribe(gateway, slow.bearer, body)).subscriptionId);
      }
      const started = await gateway.request("POST", "/v1/runs", {
        bearer: slow.bearer,
        body: { input: "go" },
      });
      assert.equal(started.status, 201, started.text);
      return made;
    };
    const held = await subscribedTwice();
    await waitFor(() => tarpit.requests.length === OWNER_IN_FLIGHT ? true : undefined);
    // Its subscriptions go while the tarpit holds their attempts; new ones get new deliveries.
    for (const subscriptionId of held) {
      const path = `/v1/webhook-subscriptions/${subscriptionId}`;
      const deleted = await gateway.request("DELETE", path, { bearer: slow.bearer });
      assert.equal(deleted.status, 204, deleted.text);
    }
    const again = await subscribedTwice();
    // The new deliveries are due (pending), yet wait for the owner's attempts in flight.
    for (const subscriptionId of again) {
      await waitFor(async () => {
        const listed = await gateway.request(
          "GET",
          `/v1/webhook-subscriptions/${subscriptionId}/deliveries`,
          { bearer: slow.bearer },
        );
        return listed.json.deliveries.length > 0 ? true : undefined;
      });
    }

    const quick = await gateway.issue(["session:read", "session:write"]);
    const began = performance.now();
    await subscribedRun(gateway, quick.bearer, healthy.url);
    const arrived = await waitFor(() => healthy.requests[0], 8_000);
    const waited = arrived.at - began;
    assert.ok(waited < 4_000, `the healthy owner's delivery took ${Math.round(waited)} ms`);
    assert.equal(tarpit.requests.length, OWNER_IN_FLIGHT, "the tarpit owner's attempts at once");

    // The tarpit answers: the new subscriptions' deliveries go out, once each.
    release();
    await waitFor(() => tarpit.requests.length === 2 * OWNER_IN_FLIGHT ? true : undefined);
    for (const subscriptionId of again) {
      const listed = await gateway.request(
        "GET",
        `/v1/webhook-subscriptions/${subscriptionId}/deliveries`,
        { bearer: slow.bearer },
      );
      assert.equal(listed.json.deliveries.length, 1);
    }
  } finally {
    release();
    await gateway.close();
    await tarpit.close();
    await healthy.close();
  }
});
