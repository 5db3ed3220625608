import assert from "node:assert/strict";
import { SessionEventStore } from "../../server/mcp/event_store.ts";

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
