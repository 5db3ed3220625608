/**
 * One event stream on its own, and the open streams of a replica: a stream's heartbeat runs on
 * the injected clock; however a stream ends (its signal, the reader's cancel, `end()`, its
 * terminal frame), it lets go once of its slot and its feed; the open
 * streams re-check each distinct credential once, at the injected time, end only the streams of a
 * refused one, and stop their timer when none is open; a reader too slow for the window gets the
 * frames it missed from the store, each once and in order, after its queued frames.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Authenticator } from "../../server/authenticator.ts";
import { type OpenStream, OpenStreams } from "../../server/runs/open_streams.ts";
import { RunFeed } from "../../server/runs/_run_feed.ts";
import { RunSubscriber } from "../../server/runs/_run_subscriber.ts";
import { openKvStore } from "../../server/store/kv/mod.ts";
import type { Store } from "../../server/store/types.ts";
import { Collector, hubOver, ids, input, instrumented, options } from "./_hub.ts";

const DECODER = new TextDecoder();

/** An authenticator that refuses `refused` and records what it was asked. */
function authenticator(
  refused = new Set<string>(),
): { authenticator: Authenticator; asked: [string | null, number][] } {
  const asked: [string | null, number][] = [];
  const fake = {
    authenticate: (authorization: string | null, now: number) => {
      asked.push([authorization, now]);
      if (authorization !== null && refused.has(authorization)) {
        return Promise.reject(new Error("revoked"));
      }
      return Promise.resolve({});
    },
  } as unknown as Authenticator;
  return { authenticator: fake, asked };
}

/** A stream over a joined feed of `runId`, its clock and its releases counted. */
async function subscriber(store: Store, runId: string, options: {
  clock: { now: number };
  signal?: AbortSignal;
  heartbeatMs?: number;
}) {
  const feed = new RunFeed({ store, runId });
  feed.join();
  await feed.firstRead();
  const streams = new OpenStreams({
    authenticator: authenticator().authenticator,
    now: () => options.clock.now,
  });
  const released = { count: 0 };
  const stream = new RunSubscriber({
    feed,
    after: 0,
    authorization: null,
    streams,
    heartbeatMs: options.heartbeatMs ?? 15_000,
    now: () => options.clock.now,
    signal: options.signal,
    release: () => {
      released.count++;
      feed.leave();
    },
  });
  return { feed, streams, stream, released, reader: stream.body.getReader() };
}

/** `promise`, or a failure after `ms` (a stream that never sends would hang the test). */
function within<T>(promise: Promise<T>, ms = 3_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Waits until `condition` holds, or fails after `ms`. */
async function waitFor(condition: () => boolean, what: string, ms = 3_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function text(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string | null> {
  const read = await reader.read();
  return read.done ? null : DECODER.decode(read.value);
}

/** Whether `promise` settles within a few timer turns. */
function settles(promise: Promise<unknown>): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), 20));
  return Promise.race([promise.then(() => true), late]).finally(() => clearTimeout(timer));
}

Deno.test("subscriber: the heartbeat is due by the injected clock, 15 s after the last send", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: "subscriber-heartbeat" });
  const clock = { now: 1_000_000 };
  const { feed, reader, stream } = await subscriber(store, "run_h", { clock });
  try {
    assert.equal(await text(reader), "retry: 2000\n\n");
    clock.now += 10_000; // opened 10 s before its first frame
    await store.events.append("run_h", [input("run_h", "run.started")]);
    await feed.refresh();
    assert.match((await within(text(reader)))!, /^id: 1\n/);
    const next = reader.read();
    clock.now += 14_999;
    await feed.refresh(true); // the poll: idle streams look at their heartbeat
    assert.equal(await settles(next), false, "not due 14.999 s after the frame");
    clock.now += 1;
    await feed.refresh(true);
    const beat = await within(next);
    assert.equal(DECODER.decode(beat.value!), ": keep-alive\n\n");
    // The next one is due 15 s after this one, not before.
    const after = reader.read();
    clock.now += 14_999;
    await feed.refresh(true);
    assert.equal(await settles(after), false, "not due 14.999 s after the heartbeat");
    await store.events.append("run_h", [input("run_h", "run.completed")]);
    await feed.refresh();
    assert.deepEqual(ids((await within(after)).value!), [2], "a frame, not a second heartbeat");
    assert.equal(await within(text(reader)), null, "ended after the terminal frame");
  } finally {
    stream.end();
    feed.stop();
    store.close();
  }
});

Deno.test("subscriber: however it ends, it lets go of its slot and its feed once", async () => {
  const store = await openKvStore({ path: ":memory:", namespace: "subscriber-release" });
  const clock = { now: 0 };
  try {
    await store.events.append("run_r", [input("run_r", "run.started")]);
    const ends: Record<string, (s: Awaited<ReturnType<typeof subscriber>>) => unknown> = {
      "its signal": () => controller.abort(),
      "the reader's cancel": (s) => s.reader.cancel(),
      "end()": (s) => s.stream.end(),
      "its terminal frame": () => store.events.append("run_r", [input("run_r", "run.cancelled")]),
    };
    let controller = new AbortController();
    for (const [how, end] of Object.entries(ends)) {
      controller = new AbortController();
      const s = await subscriber(store, "run_r", { clock, signal: controller.signal });
      try {
        assert.equal(s.streams.size, 1, `${how}: open`);
        await text(s.reader); // retry
        await text(s.reader); // the log so far
        const pending = s.reader.read().catch(() => ({ done: true }));
        await end(s);
        await s.feed.refresh();
        if (how !== "the reader's cancel") {
          // The terminal frame, if any, then the end of the stream.
          let read = await within(pending);
          while (!read.done) read = await within(s.reader.read());
        }
        assert.equal(s.released.count, 1, `${how}: released`);
        assert.equal(s.streams.size, 0, `${how}: its slot is free`);
        s.stream.end();
        controller.abort();
        assert.equal(s.released.count, 1, `${how}: released once`);
      } finally {
        s.feed.stop();
      }
    }
  } finally {
    store.close();
  }
});

Deno.test("open streams: one check per credential at the injected time; a refused one ends only its streams", async () => {
  const { authenticator: auth, asked } = authenticator(new Set(["Bearer revoked"]));
  // The clock moves on each reading: a round of checks reads it once, so its time names the round.
  let tick = 42_000;
  const streams = new OpenStreams({ authenticator: auth, now: () => ++tick, checkMs: 10 });
  const ended: string[] = [];
  const open = (name: string, authorization: string): OpenStream => {
    const stream: OpenStream = {
      authorization,
      end: () => {
        ended.push(name);
        streams.delete(stream);
      },
    };
    streams.add(stream);
    return stream;
  };
  const a1 = open("a1", "Bearer a");
  const a2 = open("a2", "Bearer a");
  open("r1", "Bearer revoked");
  assert.equal(streams.size, 3);
  await waitFor(() => tick >= 42_003, "three rounds of checks");
  assert.deepEqual(ended, ["r1"], "only the refused credential's streams end");
  assert.equal(streams.size, 2);
  const rounds = new Map<number, (string | null)[]>();
  for (const [authorization, now] of asked) {
    rounds.set(now, [...rounds.get(now) ?? [], authorization]);
  }
  assert.deepEqual(rounds.get(42_001)?.sort(), ["Bearer a", "Bearer revoked"], "the first round");
  assert.deepEqual(rounds.get(42_002), ["Bearer a"], "one check for a1 and a2");
  assert.deepEqual(rounds.get(42_003), ["Bearer a"]);
  streams.delete(a1);
  streams.delete(a2);
  await new Promise((resolve) => setTimeout(resolve, 40));
  const settled = tick;
  await new Promise((resolve) => setTimeout(resolve, 40));
  assert.equal(tick, settled, "no round of checks once no stream is open");
});

Deno.test("open streams: endAll ends every stream and stops the timer", () => {
  const { authenticator: auth } = authenticator();
  const streams = new OpenStreams({ authenticator: auth, now: () => 0 });
  let ended = 0;
  for (let i = 0; i < 3; i++) {
    const stream: OpenStream = {
      authorization: null,
      end: () => {
        ended++;
        streams.delete(stream);
      },
    };
    streams.add(stream);
  }
  streams.endAll();
  assert.equal(ended, 3);
  assert.equal(streams.size, 0);
});

Deno.test("subscriber: a reader too slow for the window gets what it missed from the store, once, in order", async () => {
  const { store, raw, replace, calls } = await instrumented();
  replace["events.watch"] = () => () => {};
  const hub = hubOver(store);
  try {
    await raw.events.append("run_slow", [
      input("run_slow", "run.started"),
      input("run_slow", "run.status", { state: "running" }),
    ]);
    const stream = new Collector(await hub.stream(options("run_slow", "running")));
    assert.deepEqual(await stream.until(2), [1, 2]);
    // The reader stops reading: entry 3 waits in the stream's queue, a view of the window.
    hub.publish(
      "run_slow",
      await raw.events.append("run_slow", [input("run_slow", "message.completed")]),
    );
    // 1,300 more: the window (1,000 entries, trimmed past 1,250) moves on past entries 3 to 251.
    for (let batch = 0; batch < 13; batch++) {
      const entries = [];
      for (let i = 0; i < 100; i++) entries.push(input("run_slow", "message.delta", { text: "y" }));
      hub.publish("run_slow", await raw.events.append("run_slow", entries));
    }
    hub.publish(
      "run_slow",
      await raw.events.append("run_slow", [input("run_slow", "run.completed")]),
    );
    const before = calls["events.list"];
    const all = ids(await within(stream.rest(), 10_000));
    assert.equal(all.length, 1_304);
    assert.deepEqual(all, Array.from({ length: 1_304 }, (_, i) => i + 1), "each once, in order");
    assert.ok(calls["events.list"] > before, "what the window no longer held came from the store");
    assert.equal(hub.openStreams, 0);
  } finally {
    hub.close();
    raw.close();
  }
});
