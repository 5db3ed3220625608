/**
 * The event hub on its own (a Deno KV store in memory, its calls counted): lingering feeds answer
 * without a store read and are evicted under their budget; entries the tail publishes reach
 * subscribers without a store read, and a publish racing a store read delivers no duplicate and
 * no gap; a complete answer is one byte body, the same bytes as the stream, and takes no stream
 * slot; an idle stream gets heartbeats; a reader that stops reading makes the stream queue one
 * chunk, not every publish.
 *
 * @module
 */
import assert from "node:assert/strict";
import { InterfaceError } from "../../server/errors.ts";
import type { EventStreamOptions, RunEventHub } from "../../server/runs/events.ts";
import type { RunEventEntry } from "../../server/store/types.ts";
import {
  Collector,
  deferred,
  hubOver,
  ids,
  input,
  instrumented,
  type Json,
  options,
  record,
  turn,
} from "./_hub.ts";

Deno.test("hub: a lingering feed answers the next subscriber of a finished run without a store read", async () => {
  const { store, raw, calls } = await instrumented();
  const hub = hubOver(store);
  try {
    await raw.events.append("run_a", turn("run_a", true));
    const first = await hub.stream(options("run_a", "completed"));
    assert.ok(typeof first === "string", "a finished run's log is answered whole");
    assert.deepEqual(ids(first), [1, 2, 3, 4]);
    assert.equal(hub.openStreams, 0);
    assert.equal(hub.lingeringFeeds, 1);
    const before = { ...calls };
    for (let i = 0; i < 3; i++) {
      const again = await hub.stream(options("run_a", "completed"));
      assert.deepEqual(again, first);
    }
    // The same frames after a resume point, still without the store.
    const resumed = await hub.stream(options("run_a", "completed", 2));
    assert.deepEqual(ids(resumed as string), [3, 4]);
    assert.deepEqual(calls, before, "no store call for the later subscribers");
  } finally {
    hub.close();
    raw.close();
  }
});

Deno.test("hub: a lingering feed stops watching, and a new subscriber of a live run resumes it", async () => {
  const { store, raw, replace } = await instrumented();
  let watching = 0;
  replace["events.watch"] = () => {
    watching++;
    return () => watching--;
  };
  const reads: number[] = [];
  replace["events.list"] = (runId: string, after: number, limit: number) => {
    reads.push(after);
    return raw.events.list(runId, after, limit);
  };
  const hub = hubOver(store);
  try {
    await raw.events.append("run_b", turn("run_b", true).slice(0, 2));
    const stream = new Collector(await hub.stream(options("run_b", "running")));
    await stream.until(2);
    assert.equal(watching, 1);
    await stream.cancel();
    assert.equal(watching, 0, "no watch while nobody listens");
    assert.equal(hub.lingeringFeeds, 1);
    // Appended while the feed lingered: the next subscriber reads only what it missed.
    await raw.events.append("run_b", [input("run_b", "message.completed", { text: "late" })]);
    reads.length = 0;
    const next = new Collector(await hub.stream(options("run_b", "running")));
    assert.deepEqual(await next.until(3), [1, 2, 3]);
    assert.equal(watching, 1);
    assert.equal(hub.lingeringFeeds, 0);
    assert.deepEqual(reads, [2], "one read, of what the log gained");
    await next.cancel();
  } finally {
    hub.close();
    raw.close();
  }
});

Deno.test("hub: entries the tail publishes reach subscribers without a store read", async () => {
  const { store, raw, replace } = await instrumented();
  replace["events.watch"] = () => () => {};
  const hub = hubOver(store);
  const hanging: PromiseWithResolvers<RunEventEntry[]>[] = [];
  try {
    await raw.events.append("run_c", turn("run_c", true).slice(0, 2));
    const stream = new Collector(await hub.stream(options("run_c", "running")));
    await stream.until(2);
    // From now on every store read of the log hangs: only a publish can deliver.
    replace["events.list"] = () => {
      const read = deferred<RunEventEntry[]>();
      hanging.push(read);
      return read.promise;
    };
    const appended = await raw.events.append("run_c", [
      input("run_c", "message.delta", { text: "hi" }),
      input("run_c", "message.completed", { text: "hi" }),
    ]);
    hub.publish("run_c", appended);
    assert.deepEqual(await stream.until(4), [1, 2, 3, 4]);
    const more = await raw.events.append("run_c", [input("run_c", "run.completed")]);
    hub.publish("run_c", more);
    assert.deepEqual(await stream.until(5), [1, 2, 3, 4, 5]);
    await stream.rest();
    assert.equal(stream.ended, true, "the stream ends after the terminal event");
  } finally {
    for (const read of hanging) read.resolve([]);
    hub.close();
    raw.close();
  }
});

Deno.test("hub: a publish racing a store read delivers every entry once, in order", async () => {
  const { store, raw, replace } = await instrumented();
  let wake: () => void = () => {};
  replace["events.watch"] = (_runId: string, listener: () => void) => {
    wake = listener;
    return () => {};
  };
  const hub = hubOver(store);
  try {
    await raw.events.append("run_d", turn("run_d", true).slice(0, 2));
    const stream = new Collector(await hub.stream(options("run_d", "running")));
    await stream.until(2);
    const gate = (): PromiseWithResolvers<void> => {
      const opened = deferred<void>();
      replace["events.list"] = async (...args: [string, number, number]) => {
        await opened.promise;
        return raw.events.list(...args);
      };
      return opened;
    };

    // 1. The read starts first and ends last: it holds 3, 4, 5; the publish gave 3, 4.
    let opened = gate();
    const batch = await raw.events.append("run_d", [
      input("run_d", "message.delta", { text: "a" }),
      input("run_d", "message.completed", { text: "a" }),
      input("run_d", "message.completed", { text: "b" }),
    ]);
    wake();
    hub.publish("run_d", batch.slice(0, 2));
    await stream.until(4);
    opened.resolve();
    assert.deepEqual(await stream.until(5), [1, 2, 3, 4, 5]);

    // 2. The read ends first with 6 only; the publish then brings 6 and 7.
    opened = gate();
    const first = await raw.events.append("run_d", [input("run_d", "message.completed")]);
    wake();
    opened.resolve();
    await stream.until(6);
    const second = await raw.events.append("run_d", [input("run_d", "message.completed")]);
    hub.publish("run_d", [...first, ...second]);
    assert.deepEqual(await stream.until(7), [1, 2, 3, 4, 5, 6, 7]);

    // 3. A publish with a gap before it (8 was never published): the feed reads the store.
    delete replace["events.list"];
    await raw.events.append("run_d", [input("run_d", "message.completed")]);
    const gapped = await raw.events.append("run_d", [input("run_d", "run.completed")]);
    hub.publish("run_d", gapped);
    await stream.rest();
    assert.deepEqual(ids(stream.bytes), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  } finally {
    hub.close();
    raw.close();
  }
});

Deno.test("hub: a complete answer is the stream's bytes as one body, ending at the first terminal event", async () => {
  const { store, raw, calls, replace } = await instrumented();
  // The publish delivers; a watch wake-up for the same append would read the store at a moment
  // of its own, racing the count below.
  replace["events.watch"] = () => () => {};
  const hub = hubOver(store);
  try {
    const opening = await raw.events.append("run_e", turn("run_e", true).slice(0, 3));
    assert.equal(opening.length, 3);
    const live = new Collector(await hub.stream(options("run_e", "running")));
    await live.until(3);
    // The first turn ends, a second turn follows and ends too.
    const rest = await raw.events.append("run_e", [
      input("run_e", "run.completed", { stopReason: "end_turn" }),
      ...turn("run_e", false, "run.failed"),
    ]);
    hub.publish("run_e", rest);
    const streamed = await live.rest();
    assert.deepEqual(ids(streamed), [1, 2, 3, 4]);
    assert.match(new TextDecoder().decode(streamed), /^retry: 2000\n\n/);

    const before = calls["events.list"];
    const whole = await hub.stream(options("run_e", "completed"));
    assert.ok(typeof whole === "string");
    assert.equal(whole, new TextDecoder().decode(streamed), "the same text as the stream");
    // Resuming after the first turn's end while the run is active again: the second turn.
    const second = await hub.stream(options("run_e", "running", 4));
    assert.ok(typeof second === "string");
    assert.deepEqual(ids(second), [5, 6, 7]);
    // After the terminal event of a run that is still finished: the retry line alone.
    const done = await hub.stream(options("run_e", "failed", 7));
    assert.equal(done, "retry: 2000\n\n");
    assert.equal(calls["events.list"], before, "answered from the window");
    // The frames of the second turn, as a stream would send them.
    const text = second;
    const frames = text.split("\n\n").filter((frame) => frame.startsWith("id: "));
    const data: Json[] = frames.map((frame) => JSON.parse(frame.split("\ndata: ")[1]));
    assert.deepEqual(data.map((event) => event.type), [
      "run.status",
      "message.completed",
      "run.failed",
    ]);
    assert.equal(data[1].text, 'héllo ✓ "quoted"');
    assert.deepEqual(data.map((event) => event.seq), [5, 6, 7]);
  } finally {
    hub.close();
    raw.close();
  }
});

Deno.test("hub: a complete answer takes no stream slot; a stream past the limit is refused", async () => {
  const { store, raw } = await instrumented();
  const hub = hubOver(store, { maxStreams: 1 });
  try {
    await raw.events.append("run_live", turn("run_live", true).slice(0, 2));
    await raw.events.append("run_done", turn("run_done", true));
    const live = new Collector(await hub.stream(options("run_live", "running")));
    await live.until(2);
    assert.equal(hub.openStreams, 1);
    const done = await hub.stream(options("run_done", "completed"));
    assert.deepEqual(ids(done as string), [1, 2, 3, 4]);
    await assert.rejects(
      () => hub.stream(options("run_live", "running")),
      (error: unknown) => error instanceof InterfaceError && error.code === "resourceExhausted",
    );
    assert.equal(hub.openStreams, 1);
    await live.cancel();
    assert.equal(hub.openStreams, 0);
  } finally {
    hub.close();
    raw.close();
  }
});

Deno.test("hub: lingering feeds are evicted least recently used first, by count, bytes and age", async () => {
  const { store, raw, calls, replace } = await instrumented();
  // Deno KV's watch reports the current value at once: leave it out, count the hub's own reads.
  replace["events.watch"] = () => () => {};
  for (const runId of ["run_1", "run_2", "run_3"]) {
    await raw.events.append(runId, turn(runId, true));
  }
  const read = async (hub: RunEventHub, runId: string): Promise<number> => {
    const before = calls["events.list"] ?? 0;
    const body = await hub.stream(options(runId, "completed"));
    assert.deepEqual(ids(body as string), [1, 2, 3, 4]);
    return (calls["events.list"] ?? 0) - before;
  };
  const byCount = hubOver(store, { linger: { maxFeeds: 2 } });
  try {
    assert.equal(await read(byCount, "run_1"), 1);
    assert.equal(await read(byCount, "run_2"), 1);
    assert.equal(await read(byCount, "run_1"), 0, "run_1 is now the most recently used");
    assert.equal(await read(byCount, "run_3"), 1);
    assert.equal(byCount.lingeringFeeds, 2);
    assert.equal(await read(byCount, "run_1"), 0, "kept");
    assert.equal(await read(byCount, "run_3"), 0, "kept");
    assert.equal(await read(byCount, "run_2"), 1, "evicted: read again");
  } finally {
    byCount.close();
  }
  const byBytes = hubOver(store, { linger: { maxBytes: 1 } });
  try {
    assert.equal(await read(byBytes, "run_1"), 1);
    assert.equal(byBytes.lingeringFeeds, 0, "a window over the byte budget is not kept");
    assert.equal(await read(byBytes, "run_1"), 1);
  } finally {
    byBytes.close();
  }
  const byAge = hubOver(store, { linger: { ms: 50 } });
  try {
    assert.equal(await read(byAge, "run_1"), 1);
    assert.equal(byAge.lingeringFeeds, 1);
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.equal(byAge.lingeringFeeds, 0, "gone after the linger time");
    assert.equal(await read(byAge, "run_1"), 1);
  } finally {
    byAge.close();
    assert.equal(byAge.lingeringFeeds, 0, "closing drops every feed");
    raw.close();
  }
});

Deno.test("hub: a subscriber resuming before the window reads the store until it catches up", async () => {
  const { store, raw, calls } = await instrumented();
  const hub = hubOver(store);
  try {
    await raw.events.append("run_f", [
      ...turn("run_f", true, "run.failed"),
      ...turn("run_f", false),
    ]);
    // A record whose end lies a window's length past seq 4: the feed's window starts after 4.
    const far = { ...record("run_f", "running"), lastEventSeq: 1_004 };
    const from = (after: number): EventStreamOptions => ({
      runId: "run_f",
      after,
      authorization: null,
      record: far,
    });
    const late = await hub.stream(from(4));
    assert.ok(typeof late === "string", "the window holds the second turn whole");
    assert.deepEqual(ids(late), [5, 6, 7]);
    const before = calls["events.list"];
    const early = new Collector(await hub.stream(from(1)));
    const bytes = await early.rest();
    assert.deepEqual(ids(bytes), [2, 3, 4], "the first turn, read from the store, ends there");
    assert.ok(calls["events.list"] > before, "read from the store");
    assert.equal(hub.openStreams, 0);
    const whole = new Collector(await hub.stream(from(0)));
    assert.deepEqual(ids(await whole.rest()), [1, 2, 3, 4]);
  } finally {
    hub.close();
    raw.close();
  }
});

Deno.test("hub: an idle stream gets a heartbeat comment, then the next frame as usual", async () => {
  const { store, raw } = await instrumented();
  const hub = hubOver(store, { heartbeatMs: 200 });
  try {
    await raw.events.append("run_h", turn("run_h", true).slice(0, 2));
    const stream = new Collector(await hub.stream(options("run_h", "running")));
    assert.deepEqual(await stream.until(2), [1, 2]);
    // Idle streams look at their heartbeat once a poll (1 s).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    hub.publish("run_h", await raw.events.append("run_h", [input("run_h", "run.completed")]));
    assert.deepEqual(await stream.until(3), [1, 2, 3]);
    const text = new TextDecoder().decode(await stream.rest());
    assert.match(text, /^retry: 2000\n\n(?:.|\n)*: keep-alive\n\n(?:.|\n)*id: 3\n/);
    assert.equal(stream.ended, true);
  } finally {
    hub.close();
    raw.close();
  }
});

Deno.test("hub: a reader that stops reading holds one queued chunk; the rest waits in the window", async () => {
  const { store, raw, replace } = await instrumented();
  replace["events.watch"] = () => () => {};
  const hub = hubOver(store);
  try {
    await raw.events.append("run_s", turn("run_s", true).slice(0, 2));
    const body = await hub.stream(options("run_s", "running"));
    assert.ok(body instanceof ReadableStream);
    const reader = body.getReader();
    const read = async (): Promise<number[]> => {
      const chunk = await reader.read();
      assert.equal(chunk.done, false);
      return ids(chunk.value!);
    };
    assert.deepEqual(await read(), []); // the retry line
    assert.deepEqual(await read(), [1, 2]);
    // A reader that keeps up gets each publish as it comes.
    const publish = async (count: number) => {
      const entries = [];
      for (let i = 0; i < count; i++) entries.push(input("run_s", "message.delta", { text: "x" }));
      hub.publish("run_s", await raw.events.append("run_s", entries));
    };
    const next = read();
    await publish(1);
    assert.deepEqual(await next, [3]);
    // It stops reading: the next publish waits in the stream's queue and the four after it in
    // the feed's window, not as four more chunks queued in the stream.
    for (let i = 0; i < 5; i++) await publish(1);
    assert.deepEqual(await read(), [4]);
    assert.deepEqual(await read(), [5, 6, 7, 8], "the backlog comes from the window in one chunk");
    // Caught up, it is pushed to again.
    const after = read();
    await publish(2);
    assert.deepEqual(await after, [9, 10]);
    await reader.cancel();
  } finally {
    hub.close();
    raw.close();
  }
});

Deno.test("hub: streams without the run's record read it once for a new feed (once for those arriving together), and answer 404 for a run gone", async () => {
  const { store, raw, calls, replace } = await instrumented();
  // No lingering: every request after the first finds no feed open.
  const hub = hubOver(store, { linger: { ms: 0 } });
  try {
    await raw.events.append("run_a", turn("run_a", true));
    const finished = { ...record("run_a", "completed"), lastEventSeq: 4 };
    replace["runs.get"] = (runId: string) => Promise.resolve(runId === "run_a" ? finished : null);
    // The caller's visibility was known without a read (`RunGateway.streamableRun`): no record.
    const whole = await hub.stream({ runId: "run_a", after: 0, authorization: null });
    assert.deepEqual(ids(whole as string), [1, 2, 3, 4]);
    assert.equal(calls["runs.get"], 1, "read once, for the new feed's window");
    // Resumed at the run's end: still one read of the record, the one the hub made.
    const ended = await hub.stream({ runId: "run_a", after: 4, authorization: null });
    assert.equal(ended, "retry: 2000\n\n");
    assert.equal(calls["runs.get"], 2);
    // Twenty arriving together, no feed open: one read between them.
    const together = await Promise.all(
      Array.from(
        { length: 20 },
        () => hub.stream({ runId: "run_a", after: 0, authorization: null }),
      ),
    );
    for (const body of together) assert.deepEqual(ids(body as string), [1, 2, 3, 4]);
    assert.equal(calls["runs.get"], 3, "one read for the twenty");
    // A run gone meanwhile (purged) is 404 runNotFound, as the route's read would answer.
    await assert.rejects(
      () => hub.stream({ runId: "run_gone", after: 0, authorization: null }),
      (error: unknown) => error instanceof InterfaceError && error.code === "runNotFound",
    );
  } finally {
    hub.close();
    raw.close();
  }
});
