import assert from "node:assert/strict";
import { ReplayBudget, SessionEventStore } from "../../server/mcp/event_store.ts";

function note(n: number) {
  return { jsonrpc: "2.0" as const, method: "notifications/message", params: { n } };
}

async function replay(store: SessionEventStore, lastEventId: string) {
  const sent: [string, unknown][] = [];
  const streamId = await store.replayEventsAfter(lastEventId, {
    send: (eventId, message) => {
      sent.push([eventId, message]);
      return Promise.resolve();
    },
  });
  return { streamId, sent };
}

Deno.test("replay sends the later events of the same stream only, in order", async () => {
  const store = new SessionEventStore();
  const a1 = await store.storeEvent("a", note(1));
  const b1 = await store.storeEvent("b", note(100));
  const a2 = await store.storeEvent("a", note(2));
  const a3 = await store.storeEvent("a", note(3));
  assert.equal(new Set([a1, b1, a2, a3]).size, 4, "event ids are unique in the session");
  const { streamId, sent } = await replay(store, a1);
  assert.equal(streamId, "a");
  assert.deepEqual(sent, [[a2, note(2)], [a3, note(3)]]);
  assert.equal(await store.getStreamIdForEventId(b1), "b");
  assert.deepEqual((await replay(store, a3)).sent, []);
});

Deno.test("an unknown event id replays nothing", async () => {
  const store = new SessionEventStore();
  await store.storeEvent("a", note(1));
  assert.deepEqual(await replay(store, "999"), { streamId: "", sent: [] });
  assert.equal(await store.getStreamIdForEventId("nope"), undefined);
});

Deno.test("the store is bounded: the oldest events are dropped", async () => {
  const store = new SessionEventStore({ maxEvents: 3 });
  const first = await store.storeEvent("a", note(1));
  const second = await store.storeEvent("a", note(2));
  await store.storeEvent("a", note(3));
  await store.storeEvent("a", note(4));
  assert.equal(store.size, 3);
  assert.equal(await store.getStreamIdForEventId(first), undefined);
  assert.deepEqual((await replay(store, second)).sent.map(([, message]) => message), [
    note(3),
    note(4),
  ]);
  assert.throws(() => new SessionEventStore({ maxEvents: 0 }), RangeError);
});

function big(n: number, bytes: number) {
  return { jsonrpc: "2.0" as const, id: n, result: { text: "x".repeat(bytes) } };
}

Deno.test("the store is bounded in bytes per session: the oldest events go first", async () => {
  const store = new SessionEventStore({ maxBytes: 64 * 1024 });
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) ids.push(await store.storeEvent("a", big(i, 10_000)));
  assert.ok(store.bytes <= 64 * 1024, `${store.bytes} bytes held`);
  assert.equal(store.size, 6);
  assert.equal(await store.getStreamIdForEventId(ids[0]), undefined, "the oldest was dropped");
  assert.equal(await store.getStreamIdForEventId(ids[39]), "a");
  // A resume from a kept event still gets every later one.
  assert.equal((await replay(store, ids[35])).sent.length, 4);
});

Deno.test("an event larger than the session's bound is not kept, and no resume skips it", async () => {
  const store = new SessionEventStore({ maxBytes: 16 * 1024 });
  const before = await store.storeEvent("a", note(1));
  const huge = await store.storeEvent("a", big(2, 64 * 1024));
  const after = await store.storeEvent("a", note(3));
  assert.equal(await store.getStreamIdForEventId(huge), undefined);
  // Resuming before the dropped event is refused (unknown id) rather than silently skipping it.
  assert.equal(await store.getStreamIdForEventId(before), undefined);
  assert.deepEqual((await replay(store, before)).sent, []);
  assert.equal(await store.getStreamIdForEventId(after), "a");
  assert.ok(store.bytes < 1024);
});

Deno.test("sessions share a byte budget: past it, the largest session loses its oldest first", async () => {
  const budget = new ReplayBudget(100 * 1024);
  const hog = new SessionEventStore({ budget, maxBytes: 1024 * 1024 });
  const quiet = new SessionEventStore({ budget, maxBytes: 1024 * 1024 });
  const kept = await quiet.storeEvent("q", big(0, 10_000));
  for (let i = 0; i < 50; i++) await hog.storeEvent("h", big(i, 10_000));
  assert.ok(budget.bytes <= 100 * 1024, `${budget.bytes} bytes across sessions`);
  assert.equal(budget.bytes, hog.bytes + quiet.bytes);
  assert.equal(await quiet.getStreamIdForEventId(kept), "q", "the small session keeps its event");
  // A session that ends gives its bytes back.
  hog.close();
  assert.equal(budget.bytes, quiet.bytes);
  assert.equal(await hog.storeEvent("h", note(1)), "51");
  assert.equal(hog.size, 0, "a closed store keeps nothing");
});
