/**
 * One run's feed on its own: its subscribers are woken when the window changed or the poll came,
 * never by a read that found nothing new (the store's watch fires for this replica's own appends
 * too, which the publish delivered already), and a wait taken back is never called. While this
 * replica's tail appends to the run, the feed holds no store watch; a publish after a gap still
 * reads the store, and when the tail ends the watch comes back and the feed reads what it missed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { RunFeed } from "../../server/runs/_run_feed.ts";
import { openKvStore, wrapStore } from "../../server/store/mod.ts";
import type { RunEventInput } from "../../server/store/types.ts";

/** Waits up to 300 ms (well under the 1 s poll) for `predicate`. */
async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 30 && !predicate(); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.ok(predicate(), what);
}

function input(runId: string, id: number): RunEventInput {
  return {
    sourceId: `sevt_${id}`,
    at: new Date().toISOString(),
    event: { type: "message.completed", runId, text: `m${id}` } as RunEventInput["event"],
  };
}

Deno.test("feed: wakes on a change or the poll, not on a read that found nothing", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: "feed-test" });
  const feed = new RunFeed({ store, runId: "run_f" });
  try {
    await store.events.append("run_f", [input("run_f", 1)]);
    await feed.refresh();
    assert.equal(feed.last, 1);

    let woken = 0;
    const wake = () => woken++;
    feed.wait(wake);
    await feed.refresh(); // what a watch wake-up for an append already published does
    assert.equal(woken, 0, "a read that found nothing new wakes no one");

    await store.events.append("run_f", [input("run_f", 2)]);
    await feed.refresh();
    assert.equal(woken, 1, "a read that found an entry wakes the waiter");
    assert.equal(feed.last, 2);

    feed.wait(wake);
    await feed.refresh(true); // the poll: idle streams check whether a heartbeat is due
    assert.equal(woken, 2);

    feed.wait(wake);
    feed.publish(await store.events.append("run_f", [input("run_f", 3)]));
    assert.equal(woken, 3, "a publish wakes at once");

    feed.wait(wake);
    feed.forget(wake);
    feed.publish(await store.events.append("run_f", [input("run_f", 4)]));
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

Deno.test("feed: a read racing a publish of the same entry wakes no one again", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: "feed-race-test" });
  const feed = new RunFeed({ store, runId: "run_r" });
  try {
    feed.publish(await store.events.append("run_r", [input("run_r", 1)]));
    await feed.refresh();
    let woken = 0;
    const wake = () => woken++;
    feed.wait(wake);
    // The watch fired before this replica's publish: the read starts, then the publish lands.
    const entries = await store.events.append("run_r", [input("run_r", 2)]);
    const reading = feed.refresh();
    feed.publish(entries);
    assert.equal(woken, 1, "the publish wakes the waiter");
    feed.wait(wake); // the stream sent entry 2 and waits again
    await reading;
    assert.equal(feed.last, 2);
    assert.equal(woken, 1, "the read found only what the publish brought: no second wake-up");
  } finally {
    feed.stop();
    store.close();
  }
});

Deno.test("feed: a watch that tells a last seq the window holds causes no read", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: "feed-watch-test" });
  let reads = 0;
  let watcher: ((last?: number) => void) | null = null;
  const counting = wrapStore(store, (part, method, call) => {
    if (part === "events" && method === "list") {
      return (...args) => {
        reads++;
        return call(...args);
      };
    }
    if (part === "events" && method === "watch") {
      return (_runId: string, listener: (last?: number) => void) => {
        watcher = listener;
        return () => watcher = null;
      };
    }
    return call;
  });
  const feed = new RunFeed({ store: counting, runId: "run_w" });
  try {
    feed.join(); // the first subscriber starts the watch and the poll
    await feed.firstRead();
    feed.publish(await store.events.append("run_w", [input("run_w", 1)]));
    const before = reads;
    watcher!(1); // this replica's own append, published already: the window holds seq 1
    assert.equal(reads, before, "no read for an entry the window holds");

    await store.events.append("run_w", [input("run_w", 2)]); // another replica's append
    watcher!(2);
    assert.equal(reads, before + 1, "a read for an entry the window lacks");
    await feed.refresh();
    assert.equal(feed.last, 2);
    const after = reads;
    watcher!(undefined); // a backend that does not tell the last seq (PostgreSQL)
    assert.equal(reads, after + 1, "a read when the watch does not tell");
    await feed.refresh();
  } finally {
    feed.stop();
    store.close();
  }
});

Deno.test("feed: while this replica's tail appends, it holds no watch; after, it watches and reads what it missed", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: "feed-local-test" });
  let watching = 0;
  let watcher: ((last?: number) => void) | null = null;
  const counting = wrapStore(store, (part, method, call) => {
    if (part === "events" && method === "watch") {
      return (_runId: string, listener: (last?: number) => void) => {
        watching++;
        watcher = listener;
        return () => {
          watching--;
          watcher = null;
        };
      };
    }
    return call;
  });
  const feed = new RunFeed({ store: counting, runId: "run_l", local: true });
  try {
    feed.join(); // the first subscriber starts the poll, and no watch: the tail publishes
    await feed.firstRead();
    assert.equal(watching, 0, "no watch while the local tail appends");
    let woken = 0;
    feed.wait(() => woken++);
    feed.publish(await store.events.append("run_l", [input("run_l", 1)]));
    assert.equal(woken, 1, "the tail's publish still wakes the subscribers");
    // The tail ended; meanwhile another replica appended (its lease, say, lapsed here).
    await store.events.append("run_l", [input("run_l", 2)]);
    feed.local = false;
    assert.equal(watching, 1, "the watch is back");
    await until(() => feed.last === 2, "the feed read what the log gained without the watch");
    feed.local = true;
    assert.equal(watching, 0, "a tail here again: the watch goes");
    feed.local = false;
    await store.events.append("run_l", [input("run_l", 3)]);
    watcher!(3);
    await feed.refresh();
    assert.equal(feed.last, 3, "the watch wakes the feed again");
    // No subscribers: neither watch nor poll, whatever the tail does.
    feed.leave();
    feed.local = true;
    feed.local = false;
    assert.equal(watching, 0);
  } finally {
    feed.stop();
    store.close();
  }
});

Deno.test("feed: a publish after a gap reads the store, also without a watch", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: "feed-gap-test" });
  const feed = new RunFeed({ store, runId: "run_g", local: true });
  try {
    feed.join();
    await feed.firstRead();
    feed.publish(await store.events.append("run_g", [input("run_g", 1)]));
    // Another replica appended seq 2 (the lease moved), then this tail appended seq 3.
    await store.events.append("run_g", [input("run_g", 2)]);
    feed.publish(await store.events.append("run_g", [input("run_g", 3)]));
    // Well before the poll (1 s).
    await until(() => feed.last === 3, "the gap read from the store, in order");
  } finally {
    feed.stop();
    store.close();
  }
});
