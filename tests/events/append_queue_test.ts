/**
 * A tail's appends on their own (`server/runs/_append_queue.ts`): one at a time, each taking
 * everything fed until it starts (an event alone goes at once, a burst that comes while a commit
 * is in flight goes together), in the order fed, whole feeds only; a failed append stops the
 * queue and its failure reaches the tail; the tail waits for room past its bound; and the text
 * deltas of one message that wait while an append is in flight are merged, keeping the id of
 * their first character, while deltas that come when the store keeps up stay as they came. A
 * stopped queue starts no append.
 *
 * @module
 */
import assert from "node:assert/strict";
import { AppendQueue, MAX_MERGED_DELTA } from "../../server/runs/_append_queue.ts";
import type { NativeEventInput, RunEventInput } from "../../server/store/types.ts";

const AT = "2026-01-01T00:00:00.000Z";

function message(id: number): RunEventInput {
  return {
    sourceId: `sevt_${id}`,
    at: AT,
    event: { type: "message.completed", runId: "run_q", text: `m${id}` },
  };
}

function delta(messageId: string, offset: number, text: string): RunEventInput {
  return {
    sourceId: `${messageId}#d${offset}`,
    at: AT,
    event: { type: "message.delta", runId: "run_q", text },
  };
}

function native(id: number): NativeEventInput {
  return { id: `sevt_${id}`, type: "agent.message", json: `{"id":"sevt_${id}"}` };
}

/** A queue whose appends wait until the test lets each go; what each append was given. */
function heldQueue(maxPending = 100, maxChars?: number) {
  const appends: { events: RunEventInput[]; native: NativeEventInput[] }[] = [];
  const releases: ((error?: Error) => void)[] = [];
  const queue = new AppendQueue(
    (events, native) => {
      appends.push({ events, native });
      return new Promise<void>((resolve, reject) => {
        releases.push((error) => error === undefined ? resolve() : reject(error));
      });
    },
    maxPending,
    undefined,
    maxChars,
  );
  /** Lets the oldest held append end (with `error`: fail), then lets the queue go on. */
  const release = async (error?: Error) => {
    releases.shift()!(error);
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { queue, appends, release };
}

/** Feeds one provider event's entries, as the tail does. */
function feed(queue: AppendQueue, events: RunEventInput[], natives: NativeEventInput[] = []) {
  const from = queue.events.length;
  const nativeFrom = queue.native.length;
  queue.events.push(...events);
  queue.native.push(...natives);
  queue.fed(from, nativeFrom);
  queue.schedule();
}

/** The tail finds no room until the held append ends and the next one takes what waits. */
async function waitsForRoom(queue: AppendQueue, release: () => Promise<void>): Promise<void> {
  let roomy = false;
  const room = queue.room().then(() => roomy = true);
  await Promise.resolve();
  assert.equal(roomy, false);
  await release();
  await room;
}

const ids = (events: RunEventInput[]) => events.map((event) => event.sourceId);

Deno.test("append queue: an event alone goes at once; what comes meanwhile goes in the next append, in order", async () => {
  const { queue, appends, release } = heldQueue();
  feed(queue, [message(1)], [native(1)]);
  assert.equal(appends.length, 1, "appended at once, not held for company");
  assert.deepEqual(ids(appends[0].events), ["sevt_1"]);
  for (let id = 2; id <= 6; id++) feed(queue, [message(id)], [native(id)]);
  assert.equal(appends.length, 1, "one append in flight at a time");
  await release();
  assert.equal(appends.length, 2);
  assert.deepEqual(ids(appends[1].events), ["sevt_2", "sevt_3", "sevt_4", "sevt_5", "sevt_6"]);
  assert.deepEqual(appends[1].native.map((entry) => entry.id), [
    "sevt_2",
    "sevt_3",
    "sevt_4",
    "sevt_5",
    "sevt_6",
  ], "a provider event's native entry goes with its run entries");
  const drained = queue.drain();
  await release();
  await drained;
  assert.equal(appends.length, 2, "nothing left to append");
});

Deno.test("append queue: a failed append stops the queue, and the tail learns of it", async () => {
  const { queue, appends, release } = heldQueue();
  feed(queue, [message(1)]);
  feed(queue, [message(2)]);
  await release(new Error("store down"));
  assert.equal(appends.length, 1, "what was fed after a failure is never appended");
  feed(queue, [message(3)]);
  assert.equal(appends.length, 1);
  await assert.rejects(queue.room(), /store down/);
  await assert.rejects(queue.drain(), /store down/);
  await queue.settle(); // never throws
});

Deno.test("append queue: past its bound the tail waits for room until the next append takes what waits", async () => {
  const { queue, appends, release } = heldQueue(3);
  feed(queue, [message(1)]);
  for (let id = 2; id <= 4; id++) feed(queue, [message(id)]);
  let roomy = false;
  const room = queue.room().then(() => roomy = true);
  await Promise.resolve();
  assert.equal(roomy, false, "three wait: the tail reads no further");
  await release();
  await room;
  assert.equal(roomy, true);
  assert.deepEqual(ids(appends[1].events), ["sevt_2", "sevt_3", "sevt_4"]);
  assert.equal(queue.events.length, 0);
  await queue.room(); // room at once while fewer wait
  const drained = queue.drain();
  await release();
  await drained;
});

Deno.test("append queue: deltas waiting for an append in flight are merged; while the store keeps up they stay as they came", async () => {
  const { queue, appends, release } = heldQueue();
  // Nothing in flight: each delta goes as the provider sliced it.
  feed(queue, [delta("sevt_m", 0, "hé")]);
  assert.deepEqual(ids(appends[0].events), ["sevt_m#d0"]);
  // While that append is in flight, the rest of the message comes in small slices.
  feed(queue, [delta("sevt_m", 2, "llo")]);
  feed(queue, [delta("sevt_m", 5, " wo")]);
  feed(queue, [delta("sevt_m", 8, "rld"), message(1)]);
  // Another message's deltas, and a slice that does not follow on, are not merged into these.
  feed(queue, [delta("sevt_n", 0, "x")]);
  feed(queue, [delta("sevt_n", 4, "y")]);
  await release();
  const next = appends[1].events;
  assert.deepEqual(ids(next), ["sevt_m#d2", "sevt_1", "sevt_n#d0", "sevt_n#d4"]);
  assert.equal((next[0].event as { text: string }).text, "llo world");
  // A merged delta holds at most MAX_MERGED_DELTA characters.
  const long = "a".repeat(MAX_MERGED_DELTA - 1);
  feed(queue, [delta("sevt_p", 0, long)]);
  feed(queue, [delta("sevt_p", long.length, "bb")]);
  assert.deepEqual(ids(queue.events), ["sevt_p#d0", `sevt_p#d${long.length}`]);
  const drained = queue.drain();
  await release();
  await release();
  await drained;
});

Deno.test("append queue: native entries alone are bounded too", async () => {
  const { queue, appends, release } = heldQueue(3);
  feed(queue, [], [native(1)]);
  for (let id = 2; id <= 4; id++) feed(queue, [], [native(id)]);
  assert.equal(queue.roomy, false, "three native entries wait: the tail reads no further");
  await waitsForRoom(queue, release);
  assert.deepEqual(appends[1].native.map((entry) => entry.id), ["sevt_2", "sevt_3", "sevt_4"]);
  const drained = queue.drain();
  await release();
  await drained;
});

Deno.test("append queue: bounded in characters too: a few large events make the tail wait as many small ones do", async () => {
  const { queue, appends, release } = heldQueue(100, 1_000);
  feed(queue, [message(1)], [native(1)]);
  const large = (id: number): NativeEventInput => ({
    id: `sevt_${id}`,
    type: "agent.tool_result",
    json: `{"id":"sevt_${id}","content":"${"x".repeat(400)}"}`,
  });
  feed(queue, [message(2)], [large(2)]);
  feed(queue, [message(3)], [large(3)]);
  assert.equal(queue.roomy, true, "two of 400 characters and more: under 1,000");
  feed(queue, [message(4)], [large(4)]);
  assert.equal(queue.roomy, false, "three: the tail reads no further, though few entries wait");
  // Text deltas count their text.
  feed(queue, [delta("sevt_m", 0, "y".repeat(10))]);
  await waitsForRoom(queue, release);
  assert.deepEqual(appends[1].native.map((entry) => entry.id), ["sevt_2", "sevt_3", "sevt_4"]);
  assert.equal(queue.roomy, true, "what waits was taken: room again");
  feed(queue, [delta("sevt_m", 10, "z".repeat(1_000))]);
  assert.equal(queue.roomy, false, "a long delta alone fills it");
  queue.stop();
  assert.equal(queue.roomy, true, "a stopped queue dropped what waited");
  await release();
  await queue.settle();
});

Deno.test("append queue: once stopped, no append starts; the one in flight ends and what waits is dropped", async () => {
  const { queue, appends, release } = heldQueue();
  feed(queue, [message(1)]);
  feed(queue, [message(2)]);
  queue.stop();
  feed(queue, [message(3)]);
  let settled = false;
  const settling = queue.settle().then(() => settled = true);
  await Promise.resolve();
  assert.equal(settled, false, "the append in flight is waited for");
  await release();
  await settling;
  await queue.drain();
  assert.equal(appends.length, 1, "nothing appended after the stop");
  assert.deepEqual(ids(appends[0].events), ["sevt_1"]);
});
