/**
 * One run's feed on its own: its subscribers are woken when the window changed or the poll came,
 * never by a read that found nothing new (the store's watch fires for this replica's own appends
 * too, which the publish delivered already), and a wait taken back is never called.
 *
 * @module
 */
import assert from "node:assert/strict";
import { RunFeed } from "../../server/runs/_run_feed.ts";
import { openKvStore } from "../../server/store/kv.ts";
import type { RunEventInput } from "../../server/store/types.ts";

function input(runId: string, id: number): RunEventInput {
  return {
    sourceId: `sevt_${id}`,
    at: new Date().toISOString(),
    event: { type: "message.completed", runId, text: `m${id}` } as RunEventInput["event"],
  };
}

Deno.test("feed: wakes on a change or the poll, not on a read that found nothing", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: "feed-test" });
  const feed = new RunFeed(store, "run_f");
  try {
    await store.appendRunEvents("run_f", [input("run_f", 1)]);
    await feed.refresh();
    assert.equal(feed.window.last, 1);

    let woken = 0;
    const wake = () => woken++;
    feed.wait(wake);
    await feed.refresh(); // what a watch wake-up for an append already published does
    assert.equal(woken, 0, "a read that found nothing new wakes no one");

    await store.appendRunEvents("run_f", [input("run_f", 2)]);
    await feed.refresh();
    assert.equal(woken, 1, "a read that found an entry wakes the waiter");
    assert.equal(feed.window.last, 2);

    feed.wait(wake);
    await feed.refresh(true); // the poll: idle streams check whether a heartbeat is due
    assert.equal(woken, 2);

    feed.wait(wake);
    feed.publish(await store.appendRunEvents("run_f", [input("run_f", 3)]));
    assert.equal(woken, 3, "a publish wakes at once");

    feed.wait(wake);
    feed.forget(wake);
    feed.publish(await store.appendRunEvents("run_f", [input("run_f", 4)]));
    await feed.refresh(true);
    assert.equal(woken, 3, "a wait taken back is not called");

    feed.wait(wake);
    feed.stop();
    assert.equal(woken, 4, "stopping wakes every waiter");
  } finally {
    feed.stop();
    store.close();
  }
});
