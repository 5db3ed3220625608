/**
 * Run events on one replica: the SSE format, resuming with `Last-Event-ID` (while the run goes
 * on and after it finished), JSON pages, the tail updating the run record, follow-up turns,
 * ownership, header errors and the stream limit.
 *
 * @module
 */
import assert from "node:assert/strict";
import { assertCode, type Gateway, startGateway } from "../gateway/_harness.ts";
import { type Frame, openEvents } from "./_sse.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** A turn of `count` messages, `gapMs` apart. */
function slowScript(gateway: Gateway, count: number, gapMs: number): void {
  gateway.fake.managedAgents!.script = ({ text }) =>
    Array.from({ length: count }, (_, i) => [
      { delayMs: gapMs },
      { type: "agent.message", content: [{ type: "text", text: `${text} part ${i + 1}` }] },
    ]).flat();
}

async function startRun(gateway: Gateway, bearer: string, input = "go"): Promise<string> {
  const started = await gateway.request("POST", "/v1/runs", { bearer, body: { input } });
  assert.equal(started.status, 201, started.text);
  return started.json.runId;
}

function answerer(gateway: Gateway) {
  return (request: Request) => gateway.server.handler(request);
}

function seqs(frames: Frame[]): number[] {
  return frames.map((frame) => Number(frame.id));
}

Deno.test("events: a stream starts with retry, frames each entry, and ends after the terminal event", async () => {
  const gateway = await startGateway();
  try {
    // The message comes after the tail's stream opened, so it streams as deltas.
    slowScript(gateway, 1, 150);
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const runId = await startRun(gateway, bearer, "hello world");
    const reader = await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId);
    assert.equal(reader.response.status, 200);
    assert.match(reader.response.headers.get("content-type")!, /^text\/event-stream/);
    assert.equal(reader.response.headers.get("x-content-type-options"), "nosniff");
    assert.deepEqual(await reader.next(), { retry: "2000" });
    const frames = await reader.rest();
    assert.deepEqual(seqs(frames), frames.map((_, i) => i + 1));
    const types = frames.map((frame) => frame.event);
    assert.equal(types[0], "run.started");
    assert.equal(types.at(-1), "run.completed");
    for (const frame of frames) {
      assert.equal(frame.data.type, frame.event);
      assert.equal(frame.data.seq, Number(frame.id));
      assert.equal(frame.data.runId, runId);
      assert.equal(typeof frame.data.at, "string");
    }
    // Deltas spell the message they precede.
    const deltas = frames.filter((frame) => frame.event === "message.delta");
    const completed = frames.find((frame) => frame.event === "message.completed")!;
    assert.ok(deltas.length > 1, "the tail asks the provider for deltas");
    assert.equal(deltas.map((frame) => frame.data.text).join(""), completed.data.text);
    assert.equal(completed.data.text, "hello world part 1");
    // The tail brought the record up to date (right after the append) and freed the slot.
    let stored = await gateway.store.runs.get(runId);
    for (let i = 0; i < 100 && stored?.lastEventSeq !== frames.length; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      stored = await gateway.store.runs.get(runId);
    }
    const record = await gateway.request("GET", `/v1/runs/${runId}`, { bearer });
    assert.equal(record.json.state, "completed");
    assert.equal(record.json.stopReason, "end_turn");
    assert.equal(record.json.lastEventSeq, frames.length);
    assert.equal(typeof record.json.endedAt, "string");
    assert.equal(await gateway.store.runs.countSlots(null, Date.now()), 0);
  } finally {
    await gateway.close();
  }
});

for (const when of ["still running", "finished"] as const) {
  Deno.test(`events: reconnecting with Last-Event-ID k gets exactly k+1… in order (${when})`, async () => {
    const gateway = await startGateway();
    try {
      slowScript(gateway, 6, 80);
      const { bearer } = await gateway.issue(["session:read", "session:write"]);
      const runId = await startRun(gateway, bearer);
      const first = await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId);
      const head: Frame[] = [];
      const k = 4;
      while (head.length < k) head.push((await first.nextEvent())!);
      await first.cancel();
      assert.deepEqual(seqs(head), [1, 2, 3, 4]);
      if (when === "finished") {
        // Wait for the end, read through the JSON page.
        for (let i = 0; i < 100; i++) {
          const page = await gateway.request("GET", `/v1/runs/${runId}/events`, { bearer });
          if (page.json.terminal) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      const again = await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId, {
        lastEventId: String(k),
      });
      const tail = await again.rest();
      // The whole log, for comparison.
      const all = await gateway.request("GET", `/v1/runs/${runId}/events?limit=500`, { bearer });
      assert.equal(all.json.terminal, true);
      const log = all.json.events as Json[];
      assert.deepEqual(seqs(tail), log.slice(k).map((event) => event.seq));
      assert.deepEqual(tail.map((frame) => frame.data), log.slice(k));
      assert.deepEqual(head.map((frame) => frame.data), log.slice(0, k));
      assert.equal(tail.at(-1)!.event, "run.completed");
      assert.equal(log.filter((event) => event.type === "message.completed").length, 6);
      // `?after=` resumes the same way.
      const viaQuery = await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId, {
        after: k,
      });
      assert.deepEqual(seqs(await viaQuery.rest()), seqs(tail));
      // Resuming after the terminal event of a finished run ends at once, empty.
      const done = await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId, {
        lastEventId: String(log.at(-1).seq),
      });
      assert.deepEqual(await done.rest(), []);
    } finally {
      await gateway.close();
    }
  });
}

Deno.test("events: JSON pages after a seq, with nextAfter and terminal", async () => {
  const gateway = await startGateway();
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const runId = await startRun(gateway, bearer);
    await (await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId)).rest();
    const first = await gateway.request("GET", `/v1/runs/${runId}/events?limit=2`, { bearer });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.json.events.map((event: Json) => event.seq), [1, 2]);
    assert.equal(first.json.nextAfter, 2);
    assert.equal(first.json.terminal, false);
    const rest = await gateway.request(
      "GET",
      `/v1/runs/${runId}/events?after=${first.json.nextAfter}`,
      { bearer, headers: { accept: "application/json" } },
    );
    assert.equal(rest.json.events[0].seq, 3);
    assert.equal(rest.json.terminal, true);
    assert.equal(rest.json.nextAfter, rest.json.events.at(-1).seq);
    const empty = await gateway.request(
      "GET",
      `/v1/runs/${runId}/events?after=${rest.json.nextAfter}`,
      { bearer },
    );
    assert.deepEqual(empty.json, { events: [], nextAfter: rest.json.nextAfter, terminal: true });
    assertCode(
      await gateway.request("GET", `/v1/runs/${runId}/events?limit=501`, { bearer }),
      422,
      "invalidRequest",
    );
    assertCode(
      await gateway.request("GET", `/v1/runs/${runId}/events?after=x`, { bearer }),
      422,
      "invalidRequest",
    );
  } finally {
    await gateway.close();
  }
});

Deno.test("events: a follow-up message on a finished run appends its new turn", async () => {
  const gateway = await startGateway();
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const runId = await startRun(gateway, bearer, "one");
    const firstTurn = await (await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId))
      .rest();
    const sent = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
      bearer,
      body: { input: "two" },
    });
    assert.equal(sent.status, 202, sent.text);
    const next = await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId, {
      lastEventId: firstTurn.at(-1)!.id,
    });
    const secondTurn = await next.rest();
    assert.equal(Number(secondTurn[0].id), Number(firstTurn.at(-1)!.id) + 1);
    assert.equal(secondTurn.at(-1)!.event, "run.completed");
    const texts = secondTurn.filter((f) => f.event === "message.completed").map((f) => f.data.text);
    assert.deepEqual(texts, ["Echo: two"]);
    // The record follows the log: it is written right after each append, so it may lag the
    // stream by a moment.
    const last = Number(secondTurn.at(-1)!.id);
    let record = await gateway.store.runs.get(runId);
    for (let i = 0; i < 100 && record?.lastEventSeq !== last; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      record = await gateway.store.runs.get(runId);
    }
    assert.equal(record?.state, "completed");
    assert.equal(record?.lastEventSeq, last);
  } finally {
    await gateway.close();
  }
});

Deno.test("events: a cancelled run's stream ends with run.cancelled", async () => {
  const gateway = await startGateway();
  try {
    slowScript(gateway, 50, 100);
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const runId = await startRun(gateway, bearer);
    const reader = await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId);
    await reader.nextEvent();
    await reader.nextEvent();
    const cancelled = await gateway.request("POST", `/v1/runs/${runId}/cancel`, { bearer });
    assert.equal(cancelled.status, 202, cancelled.text);
    const rest = await reader.rest();
    assert.equal(rest.at(-1)!.event, "run.cancelled");
  } finally {
    await gateway.close();
  }
});

Deno.test("events: ownership, a malformed Last-Event-ID, and the stream limit", async () => {
  const gateway = await startGateway({ serverOptions: { maxEventStreams: 2 } });
  try {
    slowScript(gateway, 50, 200);
    const alice = await gateway.issue(["session:read", "session:write"]);
    const bob = await gateway.issue(["session:read", "session:write"]);
    const runId = await startRun(gateway, alice.bearer);
    assertCode(
      await gateway.request("GET", `/v1/runs/${runId}/events`, { bearer: bob.bearer }),
      404,
      "runNotFound",
    );
    const bobStream = await gateway.server.handler(
      new Request(`http://127.0.0.1/v1/runs/${runId}/events`, {
        headers: new Headers({
          ...Object.fromEntries(
            (await import("../support/server.ts")).sharedHeaders(bob.bearer).entries(),
          ),
          accept: "text/event-stream",
        }),
      }),
    );
    assert.equal(bobStream.status, 404);
    await bobStream.body?.cancel();
    // Admins read every run.
    assert.equal((await gateway.request("GET", `/v1/runs/${runId}/events`)).status, 200);
    const bad = await gateway.request("GET", `/v1/runs/${runId}/events`, {
      bearer: alice.bearer,
      headers: { accept: "text/event-stream", "last-event-id": "12abc" },
    });
    assertCode(bad, 400, "invalidHeader");
    assert.equal(bad.json.error.header, "last-event-id");
    const controller = new AbortController();
    const open = [
      await openEvents(answerer(gateway), "http://127.0.0.1", alice.bearer, runId, {
        signal: controller.signal,
      }),
      await openEvents(answerer(gateway), "http://127.0.0.1", alice.bearer, runId),
    ];
    const third = await openEvents(answerer(gateway), "http://127.0.0.1", alice.bearer, runId);
    assert.equal(third.response.status, 503);
    assert.equal((await third.response.json()).error.code, "resourceExhausted");
    // Closing streams frees their slots: by abort, and by cancelling the body.
    controller.abort();
    await open[0].cancel();
    await open[1].cancel();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const fourth = await openEvents(answerer(gateway), "http://127.0.0.1", alice.bearer, runId);
    assert.equal(fourth.response.status, 200);
    await fourth.cancel();
  } finally {
    await gateway.close();
  }
});

Deno.test("events: a draining server ends its open streams and refuses new ones", async () => {
  const gateway = await startGateway();
  try {
    gateway.holdTurns(true);
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const runId = await startRun(gateway, bearer);
    const reader = await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId);
    assert.equal((await reader.nextEvent())?.event, "run.started");
    const drained = gateway.server.drain();
    // The stream ends (the client resumes elsewhere with Last-Event-ID).
    await reader.rest();
    assert.equal(reader.ended, true);
    await drained;
    const refused = await gateway.request("GET", `/v1/runs/${runId}/events`, { bearer });
    assertCode(refused, 503, "shuttingDown");
  } finally {
    await gateway.close();
  }
});

Deno.test("events: a principal that expires while streaming has its stream ended within 1 s", async () => {
  const gateway = await startGateway();
  try {
    gateway.holdTurns(true);
    const expiresAt = new Date(Date.now() + 2_000).toISOString();
    const principalId = crypto.randomUUID();
    const issued = await gateway.request("POST", "/v1/principals", {
      body: { principalId, capabilities: ["session:read", "session:write"], expiresAt },
    });
    assert.equal(issued.status, 201, issued.text);
    const bearer = issued.json.bearer;
    const runId = await startRun(gateway, bearer);
    const reader = await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId);
    assert.equal((await reader.nextEvent())?.event, "run.started");
    await reader.rest();
    const late = Date.now() - Date.parse(expiresAt);
    assert.ok(late >= 0 && late < 1_000, `the stream ended ${late} ms after the expiry`);
  } finally {
    await gateway.close();
  }
});

Deno.test("events: one principal holds at most its own share of stream slots", async () => {
  const gateway = await startGateway({
    serverOptions: { maxEventStreams: 10, maxEventStreamsPerPrincipal: 2 },
  });
  const open: { cancel(): Promise<void> }[] = [];
  try {
    slowScript(gateway, 50, 200);
    const hog = await gateway.issue(["session:read", "session:write"]);
    const other = await gateway.issue(["session:read", "session:write"]);
    const hogRun = await startRun(gateway, hog.bearer);
    const otherRun = await startRun(gateway, other.bearer);
    for (let i = 0; i < 2; i++) {
      const stream = await openEvents(answerer(gateway), "http://127.0.0.1", hog.bearer, hogRun);
      assert.equal(stream.response.status, 200);
      open.push(stream);
    }
    const third = await openEvents(answerer(gateway), "http://127.0.0.1", hog.bearer, hogRun);
    assert.equal(third.response.status, 429);
    assert.equal(third.response.headers.get("retry-after"), "1");
    const body = await third.response.json();
    assert.equal(body.error.code, "resourceExhausted");
    assert.equal(body.error.limit, "maxEventStreamsPerPrincipal");
    // Another principal still streams: the hog took only its own slots.
    const theirs = await openEvents(answerer(gateway), "http://127.0.0.1", other.bearer, otherRun);
    assert.equal(theirs.response.status, 200);
    open.push(theirs);
    // A slot given back is the hog's again.
    await open.shift()!.cancel();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const again = await openEvents(answerer(gateway), "http://127.0.0.1", hog.bearer, hogRun);
    assert.equal(again.response.status, 200);
    open.push(again);
  } finally {
    for (const stream of open) await stream.cancel().catch(() => {});
    await gateway.close();
  }
});

Deno.test("events: a stream resumed past the end of a finished run ends at once", async () => {
  const gateway = await startGateway();
  try {
    const { bearer } = await gateway.issue(["session:read", "session:write"]);
    const runId = await startRun(gateway, bearer);
    await (await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId)).rest();
    const last = (await gateway.request("GET", `/v1/runs/${runId}/events`, { bearer })).json
      .nextAfter;
    for (const beyond of [last + 1, last + 1_000]) {
      const began = Date.now();
      const stream = await openEvents(answerer(gateway), "http://127.0.0.1", bearer, runId, {
        lastEventId: String(beyond),
      });
      assert.equal(stream.response.status, 200);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const frames = await Promise.race([
        stream.rest(),
        new Promise<"open">((resolve) => timer = setTimeout(() => resolve("open"), 3_000)),
      ]);
      clearTimeout(timer);
      if (frames === "open") await stream.cancel();
      assert.deepEqual(frames, [], "nothing to send, and the stream ends");
      assert.ok(Date.now() - began < 1_000, "at once, not after a poll or a heartbeat");
      const page = await gateway.request("GET", `/v1/runs/${runId}/events?after=${beyond}`, {
        bearer,
      });
      assert.deepEqual(page.json, { events: [], nextAfter: beyond, terminal: true });
    }
  } finally {
    await gateway.close();
  }
});

Deno.test("events: a stream let in by the run's remembered owner reads no record, and still refuses everyone else on both interfaces", async () => {
  const gateway = await startGateway();
  try {
    const alice = await gateway.issue(["session:read", "session:write"]);
    const bob = await gateway.issue(["session:read", "session:write"]);
    const approver = await gateway.issue(["session:read", "session:approve"]);
    const runId = await startRun(gateway, alice.bearer, "hello");
    // The first stream reads the record (and this replica remembers its owner).
    const first =
      await (await openEvents(answerer(gateway), "http://127.0.0.1", alice.bearer, runId))
        .rest();
    assert.equal(first.at(-1)?.event, "run.completed");
    const runs = gateway.store.runs;
    const get = runs.get.bind(runs);
    let reads = 0;
    // Reads made for the event routes' requests, in the routes or the hub (the run's tail reads
    // the record for itself).
    runs.get = (id: string) => {
      if (
        /routes\/run_events\.ts|native\/events\.ts|runs\/events\.ts/.test(new Error().stack ?? "")
      ) {
        reads++;
      }
      return get(id);
    };
    const again =
      await (await openEvents(answerer(gateway), "http://127.0.0.1", alice.bearer, runId))
        .rest();
    assert.deepEqual(seqs(again), seqs(first));
    assert.equal(reads, 0, "the owner's second stream read no record");
    // Everyone else is decided as before: another principal gets 404, an approver and an admin
    // read every run, an unknown run is 404.
    const bobs = await openEvents(answerer(gateway), "http://127.0.0.1", bob.bearer, runId);
    assert.equal(bobs.response.status, 404);
    assert.equal((await bobs.response.json()).error.code, "runNotFound");
    const native = await gateway.server.handler(
      new Request(`http://127.0.0.1/provider/v1/sessions/${runId}/events/stream`, {
        headers: { "x-api-key": bob.bearer, "anthropic-version": "2023-06-01" },
      }),
    );
    assert.equal(native.status, 404);
    assert.equal((await native.json()).error.type, "not_found_error");
    const approvers = await openEvents(
      answerer(gateway),
      "http://127.0.0.1",
      approver.bearer,
      runId,
    );
    assert.equal(approvers.response.status, 200);
    assert.deepEqual(seqs(await approvers.rest()), seqs(first));
    const admins = await openEvents(answerer(gateway), "http://127.0.0.1", gateway.admin, runId);
    assert.equal(admins.response.status, 200);
    await admins.cancel();
    const unknown = await openEvents(answerer(gateway), "http://127.0.0.1", alice.bearer, "sesn_0");
    assert.equal(unknown.response.status, 404);
    await unknown.response.body?.cancel();
    assert.equal(reads, 1, "only the unknown run was read");
  } finally {
    await gateway.close();
  }
});
