/**
 * The tail hands what it appends to this replica's subscribers: a batch without a state change
 * at once (before the run record is written), a batch with one (`run.status`, a terminal event)
 * once the record shows it, save the entries before the state change, which go at once. Store
 * reads of the log are held here, so only the hand-over can deliver; while this replica tails
 * the run, its feed holds no store watch (the tail's own commits wake no store read). A
 * batch without a state change changes only the record's `lastEventSeq`, written at most every
 * `RECORD_DELAY_MS`. A record write derived from a record another writer changed since is
 * derived again, so a follow-up recorded meanwhile is kept. A page or a resumed stream that
 * reaches a terminal entry the record has not taken in yet waits for the record rather than say
 * the run goes on. A burst that comes while an append is in flight goes in the next append
 * together, and no subscriber sees an entry before its append committed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { openKvStore, wrapStore } from "../../server/store/mod.ts";
import type { Store, StoredRunRecord } from "../../server/store/types.ts";
import { RECORD_DELAY_MS, RunTails } from "../../server/runs/tail.ts";
import { RunActivity } from "../../server/runs/activity.ts";
import type { ProviderManagedAgentClient } from "../../client/mod.ts";
import { startGateway } from "../gateway/_harness.ts";
import { type Frame, openEvents } from "./_sse.ts";

/** A store whose log reads, appends and record writes the test can hold. */
interface Held {
  store: Store;
  /** Log reads (`events.list`) wait while set. */
  holdReads: boolean;
  /** Run record writes (`runs.update`) wait while set. */
  holdRecords: boolean;
  /** Record writes waiting now. */
  heldRecords: { record: StoredRunRecord; release: () => void }[];
  /** Record writes so far. */
  recordWrites: number;
  /** Store watches open now (with `watch`; else the watch does nothing and none counts). */
  watches: number;
  /** Record reads (`runs.get`) so far. */
  recordReads: number;
  /** Appends (`events.appendBatch`) wait while set. */
  holdAppends: boolean;
  /** Appends so far. */
  appends: number;
  /** Lets every held call go. */
  releaseAll(): void;
}

/** A holding store over `raw`; its store watch does nothing unless `watch` is set. */
function holding(raw: Store, options: { watch?: boolean } = {}): Held {
  const readers: (() => void)[] = [];
  const appenders: (() => void)[] = [];
  const held: Held = {
    store: raw,
    holdReads: false,
    holdRecords: false,
    heldRecords: [],
    recordWrites: 0,
    watches: 0,
    recordReads: 0,
    holdAppends: false,
    appends: 0,
    releaseAll() {
      held.holdReads = false;
      held.holdRecords = false;
      held.holdAppends = false;
      for (const release of readers.splice(0)) release();
      for (const release of appenders.splice(0)) release();
      for (const { release } of held.heldRecords.splice(0)) release();
    },
  };
  held.store = wrapStore(raw, (part, method, call) => {
    if (part === "events" && method === "watch") {
      if (options.watch !== true) return () => () => {};
      return (...args: Parameters<Store["events"]["watch"]>) => {
        const stop = raw.events.watch(...args);
        held.watches++;
        let stopped = false;
        return () => {
          if (!stopped) held.watches--;
          stopped = true;
          stop();
        };
      };
    }
    if (part === "events" && method === "appendBatch") {
      return async (...args: Parameters<Store["events"]["appendBatch"]>) => {
        held.appends++;
        if (held.holdAppends) await new Promise<void>((resolve) => appenders.push(resolve));
        return raw.events.appendBatch(...args);
      };
    }
    if (part === "events" && method === "list") {
      return async (...args: [string, number, number]) => {
        if (held.holdReads) await new Promise<void>((resolve) => readers.push(resolve));
        return raw.events.list(...args);
      };
    }
    if (part === "runs" && method === "get") {
      return (runId: string) => {
        held.recordReads++;
        return raw.runs.get(runId);
      };
    }
    if (part === "runs" && method === "update") {
      return async (record: StoredRunRecord, expected?: StoredRunRecord) => {
        held.recordWrites++;
        if (held.holdRecords) {
          await new Promise<void>((resolve) => held.heldRecords.push({ record, release: resolve }));
        }
        return raw.runs.update(record, expected);
      };
    }
    return call;
  });
  return held;
}

/** The next frame, or "none" when none came within `ms`; the read goes on when none did. */
async function within(
  pending: Promise<Frame | null>,
  ms: number,
): Promise<Frame | null | "none"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const none = new Promise<"none">((resolve) => timer = setTimeout(() => resolve("none"), ms));
  try {
    return await Promise.race([pending, none]);
  } finally {
    clearTimeout(timer);
  }
}

async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !predicate(); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.ok(predicate(), what);
}

/**
 * A gateway over a holding store, with a run started (its turn held open) and one subscriber that
 * has read the run's first two events (`run.started`, `run.status`).
 */
async function startedRun(options: { watch?: boolean } = {}): Promise<{
  gateway: Awaited<ReturnType<typeof startGateway>>;
  store: Held;
  runId: string;
  reader: Awaited<ReturnType<typeof openEvents>>;
}> {
  let held: Held | undefined;
  const gateway = await startGateway({
    store: async (namespace) => {
      held = holding(await openKvStore({ path: ":memory:", namespace }), options);
      return held.store;
    },
  });
  try {
    gateway.holdTurns(true);
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const started = await gateway.request("POST", "/v1/runs", { bearer, body: { input: "go" } });
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;
    const reader = await openEvents(
      (request) => gateway.server.handler(request),
      "http://127.0.0.1",
      bearer,
      runId,
    );
    assert.equal((await reader.nextEvent())?.event, "run.started");
    assert.equal((await reader.nextEvent())?.event, "run.status");
    return { gateway, store: held!, runId, reader };
  } catch (error) {
    held?.releaseAll();
    await gateway.close();
    throw error;
  }
}

Deno.test("publish: a message reaches subscribers before the record write, a run's end only after it", async () => {
  const { gateway, store, runId, reader } = await startedRun();
  try {
    // The turn's start is recorded: from now on, no log read and no record write goes through.
    for (let i = 0; i < 200 && (await store.store.runs.get(runId))?.lastEventSeq !== 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal((await store.store.runs.get(runId))?.lastEventSeq, 2);
    store.holdReads = true;
    store.holdRecords = true;

    gateway.fake.managedAgents!.emit(runId, {
      type: "agent.message",
      content: [{ type: "text", text: "first" }],
    });
    let frame = await within(reader.nextEvent(), 5_000);
    assert.notEqual(frame, "none", "the message came while record writes were held");
    assert.equal((frame as Frame).event, "message.delta");
    // The tail writes the record after handing the batch over, within RECORD_DELAY_MS.
    while ((frame as Frame).event !== "message.completed") {
      const pending = reader.nextEvent();
      frame = await within(pending, 200);
      if (frame === "none") {
        for (const { release } of store.heldRecords.splice(0)) release();
        frame = await within(pending, 5_000);
      }
      assert.notEqual(frame, "none");
    }
    assert.equal((frame as Frame).data.text, "first");
    await until(() => store.heldRecords.length > 0, "the tail writes the record after it");

    // The turn ends: its run.completed waits for the record that says so.
    gateway.fake.managedAgents!.emit(runId, {
      type: "session.status_idle",
      stop_reason: { type: "end_turn" },
      stop_details: null,
    });
    await until(() => {
      if (store.heldRecords.some(({ record }) => record.state === "completed")) return true;
      for (const { release } of store.heldRecords.splice(0)) release();
      return false;
    }, "the tail writes the run's end");
    const pending = reader.nextEvent();
    assert.equal(await within(pending, 300), "none", "no terminal event before the record");
    for (const { release } of store.heldRecords.splice(0)) release();
    frame = await within(pending, 5_000);
    assert.equal((frame as Frame).event, "run.completed");
    assert.equal((await gateway.store.runs.get(runId))?.state, "completed");
    assert.equal(await reader.nextEvent(), null, "the stream ends after the terminal event");
  } finally {
    store.releaseAll();
    await gateway.close();
  }
});

Deno.test("record: a page and a resumed stream that reach a turn's end the record lags behind wait for the record", async () => {
  const { gateway, store, runId, reader } = await startedRun();
  try {
    await reader.cancel();
    // The turn ends: the tail appends run.completed, and its write of the record is held.
    store.holdRecords = true;
    gateway.fake.managedAgents!.emit(runId, {
      type: "session.status_idle",
      stop_reason: { type: "end_turn" },
    });
    await until(() => {
      if (store.heldRecords.some(({ record }) => record.state === "completed")) return true;
      for (const { release } of store.heldRecords.splice(0)) release();
      return false;
    }, "the tail writes the run's end");
    const log = await store.store.events.list(runId, 0, 100);
    const end = log.at(-1)!;
    assert.equal(end.event.type, "run.completed", "the log ends with the turn's end");
    assert.equal((await store.store.runs.get(runId))?.state, "running", "the record lags");

    const reads = store.recordReads;
    const page = gateway.request("GET", `/v1/runs/${runId}/events?after=2`);
    const resumed = openEvents(
      (request) => gateway.server.handler(request),
      "http://127.0.0.1",
      gateway.admin,
      runId,
      { lastEventId: String(end.seq) },
    );
    // Each reads the record for the request, finds it behind the log and reads it again.
    await until(
      () => store.recordReads >= reads + 4,
      "the page and the stream read the record again rather than answer from the lagging one",
    );
    store.releaseAll();

    const answered = await page;
    assert.equal(answered.status, 200, answered.text);
    assert.equal(answered.json.events.at(-1).type, "run.completed");
    assert.equal(answered.json.terminal, true, "the page ends at the run's end");
    const stream = await resumed;
    assert.equal(stream.response.status, 200);
    assert.deepEqual(await within(stream.next(), 5_000), { retry: "2000" });
    assert.equal(await within(stream.next(), 5_000), null, "ended at once, nothing to send");
  } finally {
    store.releaseAll();
    await gateway.close();
  }
});

Deno.test("publish: while this replica tails a run, its subscribers' feed holds no store watch; the tail's appends still reach them", async () => {
  const { gateway, store, runId, reader } = await startedRun({ watch: true });
  try {
    assert.equal(store.watches, 0, "the tail publishes its appends: no watch");
    gateway.fake.managedAgents!.emit(runId, {
      type: "agent.message",
      content: [{ type: "text", text: "hello" }],
    });
    let frame = await within(reader.nextEvent(), 5_000);
    while (frame !== "none" && frame !== null && frame.event !== "message.completed") {
      frame = await within(reader.nextEvent(), 5_000);
    }
    assert.equal((frame as Frame).data.text, "hello");
    assert.equal(store.watches, 0);
    // The turn ends: the tail's last appends reach the subscriber, and its stream ends.
    gateway.fake.managedAgents!.emit(runId, {
      type: "session.status_idle",
      stop_reason: { type: "end_turn" },
    });
    const events: string[] = [];
    for (frame = await within(reader.nextEvent(), 5_000); frame !== null;) {
      assert.notEqual(frame, "none", "the run's end arrives");
      events.push((frame as Frame).event ?? "");
      frame = await within(reader.nextEvent(), 5_000);
    }
    assert.equal(events.at(-1), "run.completed");
  } finally {
    store.releaseAll();
    await gateway.close();
  }
});

Deno.test("publish: a burst that comes while an append is in flight goes in the next append, never before its commit", async () => {
  const { gateway, store, runId, reader } = await startedRun();
  try {
    await until(() => store.recordWrites > 0, "the turn's start is recorded");
    store.holdAppends = true;
    const appendsBefore = store.appends;
    const texts = Array.from({ length: 20 }, (_, i) => `message number ${i}`);
    // The first message's append is held; the rest (in deltas of 4 characters) come meanwhile.
    for (const text of texts) {
      gateway.fake.managedAgents!.emit(runId, {
        type: "agent.message",
        content: [{ type: "text", text }],
      });
    }
    await until(() => store.appends > appendsBefore, "the tail appends the first message");
    const pending = reader.nextEvent();
    assert.equal(await within(pending, 300), "none", "nothing reaches a subscriber uncommitted");
    store.holdAppends = false;
    store.releaseAll();
    const frames: Frame[] = [];
    let first = await within(pending, 5_000);
    assert.notEqual(first, "none");
    frames.push(first as Frame);
    while (frames.filter((frame) => frame.event === "message.completed").length < texts.length) {
      first = await within(reader.nextEvent(), 5_000);
      assert.notEqual(first, "none", "the burst arrives");
      frames.push(first as Frame);
    }
    const completed = frames.filter((frame) => frame.event === "message.completed");
    assert.deepEqual(completed.map((frame) => frame.data.text), texts, "all of them, in order");
    const seqs = frames.map((frame) => Number(frame.id));
    assert.deepEqual(seqs, seqs.map((_, i) => seqs[0] + i), "no gap, no repeat");
    // Each message's deltas still spell it; those that waited together were merged.
    let spelled = "";
    for (const frame of frames) {
      if (frame.event === "message.delta") spelled += frame.data.text;
      else {
        assert.equal(spelled, frame.data.text);
        spelled = "";
      }
    }
    const deltas = frames.filter((frame) => frame.event === "message.delta").length;
    assert.ok(deltas <= texts.length + 8, `${deltas} deltas for ${texts.length} messages`);
    const appends = store.appends - appendsBefore;
    assert.ok(appends <= 4, `${appends} appends for a burst of ${texts.length} messages`);
  } finally {
    store.releaseAll();
    await gateway.close();
  }
});

Deno.test("publish: streamed events cost the record one write per RECORD_DELAY_MS, not one each", async () => {
  const { gateway, store, runId, reader } = await startedRun();
  try {
    await until(() => store.recordWrites > 0, "the turn's start is recorded");
    await new Promise((resolve) => setTimeout(resolve, RECORD_DELAY_MS * 2));
    const writesBefore = store.recordWrites;

    const messages = 20;
    for (let i = 0; i < messages; i++) {
      gateway.fake.managedAgents!.emit(runId, {
        type: "agent.message",
        content: [{ type: "text", text: `m${i}` }],
      });
    }
    let last = 0;
    for (let seen = 0; seen < messages;) {
      const frame = await reader.nextEvent();
      assert.ok(frame !== null, "the stream goes on");
      if (frame.event === "message.completed") seen++;
      last = Number(frame.id);
    }
    let record = await gateway.store.runs.get(runId);
    for (let i = 0; i < 100 && record?.lastEventSeq !== last; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      record = await gateway.store.runs.get(runId);
    }
    assert.equal(record?.lastEventSeq, last, "the record catches up with the log");
    assert.equal(record?.state, "running");
    const writes = store.recordWrites - writesBefore;
    assert.ok(writes >= 1 && writes <= 3, `${writes} record writes for ${messages} messages`);
  } finally {
    store.releaseAll();
    await gateway.close();
  }
});

Deno.test("record: a follow-up recorded while the tail writes a turn's end is not overwritten", async () => {
  const { gateway, store, runId, reader } = await startedRun();
  try {
    // The tail's write of the turn's end is held after it read the record...
    store.holdRecords = true;
    gateway.fake.managedAgents!.emit(runId, {
      type: "session.status_idle",
      stop_reason: { type: "end_turn" },
    });
    for (let i = 0; i < 200 && store.heldRecords.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(store.heldRecords.length, 1, "the tail's record write is held");
    assert.equal(store.heldRecords[0].record.state, "completed");
    // ...while a follow-up message is sent and recorded...
    store.holdRecords = false;
    const sent = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      body: { input: "And the tests?" },
    });
    assert.equal(sent.status, 202, sent.text);
    assert.equal((await store.store.runs.get(runId))?.turns, 2);
    // ...then the held write goes on: it was derived from the record before the follow-up, so it
    // is refused, derived again from the new record, and the earlier turn's end changes nothing.
    store.releaseAll();
    assert.equal((await reader.nextEvent())?.event, "run.completed");
    for (let i = 0; i < 100 && store.recordWrites < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const record = await store.store.runs.get(runId);
    assert.equal(record?.turns, 2, "the follow-up's turn is kept");
    assert.equal(record?.state, "running", "the new turn is not ended by the old turn's end");
  } finally {
    store.releaseAll();
    await gateway.close();
  }
});

Deno.test("publish: a message read with its turn's end reaches subscribers before the record write", async () => {
  const store = holding(await openKvStore({ path: ":memory:", namespace: "publish-test" }));
  const runId = "sesn_publish_split";
  const now = new Date().toISOString();
  await store.store.runs.reserveSlot({
    principalId: "p",
    slotId: "slot",
    principalLimit: 8,
    serviceLimit: 8,
    now: Date.now(),
    leaseMs: 60_000,
  });
  await store.store.runs.create({
    runId,
    principalId: "p",
    agentId: "agent_1",
    environmentId: "env_1",
    state: "running",
    lastEventSeq: 0,
    createdAt: now,
    updatedAt: now,
  }, "slot");
  // One read of the provider's stream holds a message and the idle that ends its turn, so the
  // tail appends them in one batch.
  const frame = (event: Record<string, unknown>) =>
    `event: message\ndata: ${JSON.stringify({ processed_at: now, ...event })}\n\n`;
  const chunk = new TextEncoder().encode(
    frame({ type: "agent.message", id: "sevt_msg", content: [{ type: "text", text: "done" }] }) +
      frame({ type: "session.status_idle", id: "sevt_idle", stop_reason: { type: "end_turn" } }),
  );
  const client = {
    openEventStream: () =>
      Promise.resolve(
        new ReadableStream<Uint8Array>({
          start: (controller) => controller.enqueue(chunk),
        }),
      ),
    async *iterateEvents() {},
  } as unknown as ProviderManagedAgentClient;
  const handed: string[][] = [];
  const tails = new RunTails({
    store: store.store,
    logger: { request() {}, info() {}, error() {}, flush() {} },
    client: () => Promise.resolve(client),
    activity: new RunActivity(),
    now: Date.now,
    onAppend: (_, entries) => handed.push(entries.map((entry) => entry.event.type)),
  });
  try {
    store.holdRecords = true;
    tails.wake(runId);
    await until(() => store.heldRecords.length > 0, "the tail writes the turn's end");
    assert.equal(store.heldRecords[0].record.state, "completed");
    assert.deepEqual(
      handed,
      [["run.started", "message.delta", "message.completed"]],
      "the message went at once",
    );
    store.releaseAll();
    await until(() => handed.length === 2, "the turn's end is handed over after the write");
    assert.deepEqual(handed[1], ["run.completed"]);
    assert.equal((await store.store.runs.get(runId))?.state, "completed");
  } finally {
    store.releaseAll();
    await tails.close();
    await store.store.close();
  }
});
