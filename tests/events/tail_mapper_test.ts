/**
 * The tail's mapping on its own (`server/runs/_tail_mapper.ts`): provider session events become
 * log entries with stable source ids. Every log opens with `run.started`; a running status is
 * `run.status running`; messages, tool calls and turn ends map as the client maps them; deltas
 * carry the offset of their text; an event fed twice (history and stream overlapping) yields
 * nothing the second time; an event without an id is not logged; the turn and its position
 * follow the events; and feeding the whole history to a new mapper (a takeover) yields the same
 * entries, so the store's source-id check appends only what the previous tail missed.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  type ManagedAgentSessionEvent,
  parseSessionEvent,
  TailMapper,
} from "../../server/runs/_tail_mapper.ts";
import type { RunEventInput } from "../../server/store/run_event_types.ts";

const RUN = "sesn_t";

function event(raw: Record<string, unknown>): ManagedAgentSessionEvent {
  const parsed = parseSessionEvent(raw);
  assert.ok(parsed !== null, `parses: ${JSON.stringify(raw)}`);
  return parsed;
}

/** Feeds the events, returning what they yielded as `[sourceId, event]` pairs. */
function feed(mapper: TailMapper, events: ManagedAgentSessionEvent[]): [string, unknown][] {
  const out: RunEventInput[] = [];
  for (const one of events) mapper.feed(one, out);
  for (const entry of out) assert.ok(!Number.isNaN(Date.parse(entry.at)), "an RFC 3339 time");
  return out.map((entry) => [entry.sourceId, entry.event]);
}

const userMessage = (id: string, text = "hi") =>
  event({ type: "user.message", id, content: [{ type: "text", text }] });
const running = (id: string) => event({ type: "session.status_running", id });
const idle = (id: string, reason = "end_turn") =>
  event({ type: "session.status_idle", id, stop_reason: { type: reason } });
const message = (id: string, text: string) =>
  event({ type: "agent.message", id, content: [{ type: "text", text }] });
const start = (messageId: string) =>
  event({ type: "event_start", event: { id: messageId, type: "agent.message" } });
const delta = (messageId: string, text: string) =>
  event({ type: "event_delta", event_id: messageId, delta: { content: { type: "text", text } } });

/** A whole turn as the provider's history lists it (deltas are never in the history). */
function history(): ManagedAgentSessionEvent[] {
  return [
    userMessage("sevt_u1"),
    running("sevt_r1"),
    message("sevt_m1", "hello"),
    event({ type: "agent.tool_use", id: "sevt_t1", name: "bash", input: { command: "ls" } }),
    event({ type: "agent.tool_result", id: "sevt_tr1", tool_use_id: "sevt_t1" }),
    idle("sevt_i1"),
  ];
}

Deno.test("tail mapper: a turn becomes run.started, run.status, its events and its end, with the provider ids", () => {
  const mapper = new TailMapper(RUN, Date.now);
  assert.deepEqual(feed(mapper, history()), [
    ["run.started", { type: "run.started", runId: RUN }],
    ["sevt_r1", { type: "run.status", runId: RUN, state: "running" }],
    // No delta streamed before it (a history): the message's whole text is its one delta.
    ["sevt_m1#d0", { type: "message.delta", runId: RUN, text: "hello" }],
    ["sevt_m1", { type: "message.completed", runId: RUN, text: "hello" }],
    ["sevt_t1", {
      type: "tool.call",
      runId: RUN,
      id: "sevt_t1",
      name: "bash",
      input: { command: "ls" },
      needsConfirmation: false,
    }],
    ["sevt_tr1", { type: "tool.result", runId: RUN, isError: false, id: "sevt_t1" }],
    ["sevt_i1", { type: "run.completed", runId: RUN, stopReason: "end_turn" }],
  ]);
  assert.equal(mapper.turn, 1);
  assert.equal(mapper.position, "ended");
});

Deno.test("tail mapper: deltas carry their message's id and the offset of their first character", () => {
  const mapper = new TailMapper(RUN, Date.now);
  const yielded = feed(mapper, [
    userMessage("sevt_u1"),
    running("sevt_r1"),
    event({ type: "event_start", event: { id: "sevt_m1", type: "agent.message" } }),
    delta("sevt_m1", "hél"),
    delta("sevt_m1", "lo"),
    message("sevt_m1", "héllo world"),
  ]);
  assert.deepEqual(yielded.slice(2), [
    ["sevt_m1#d0", { type: "message.delta", runId: RUN, text: "hél" }],
    ["sevt_m1#d3", { type: "message.delta", runId: RUN, text: "lo" }],
    // The final message adds what the deltas missed, at its offset.
    ["sevt_m1#d5", { type: "message.delta", runId: RUN, text: " world" }],
    ["sevt_m1", { type: "message.completed", runId: RUN, text: "héllo world" }],
  ]);
  // A model request that ended without its message drops the previews: offsets start again.
  const again = feed(mapper, [
    start("sevt_m2"),
    delta("sevt_m2", "ab"),
    event({ type: "span.model_request_end", id: "sevt_s1" }),
    start("sevt_m2"),
    delta("sevt_m2", "ab"),
  ]);
  assert.deepEqual(again.map(([sourceId]) => sourceId), ["sevt_m2#d0", "sevt_m2#d0"]);
  // A delta that names no message has no stable id: it is not logged.
  assert.deepEqual(
    feed(mapper, [
      event({ type: "event_delta", delta: { content: { type: "text", text: "x" } } }),
    ]),
    [],
  );
});

Deno.test("tail mapper: deltas of a preview whose start the connection did not see are not logged, nor the rest after them", () => {
  // The first connection logged the start of the message; its stream broke in the middle.
  const first = new TailMapper(RUN, Date.now);
  const logged = feed(first, [
    start("sevt_m1"),
    delta("sevt_m1", "abcd"),
    delta("sevt_m1", "efgh"),
  ]);
  assert.deepEqual(logged.slice(1).map(([sourceId]) => sourceId), ["sevt_m1#d0", "sevt_m1#d4"]);
  // The next connection opens in the middle of the same preview: its first delta is not at
  // offset 0 (an id counted from there would skip "ijkl" as known, then log "qrst" at #d4,
  // an id the log holds for "efgh"), so nothing of the preview is logged as deltas.
  const second = new TailMapper(RUN, Date.now);
  second.feed(running("sevt_r1"), []);
  assert.deepEqual(
    feed(second, [
      delta("sevt_m1", "ijkl"),
      delta("sevt_m1", "mnop"),
      delta("sevt_m1", "qrst"),
      message("sevt_m1", "abcdefghijklmnopqrstuvwxyz"),
    ]),
    [["sevt_m1", {
      type: "message.completed",
      runId: RUN,
      text: "abcdefghijklmnopqrstuvwxyz",
    }]],
  );
  // The provider streamed a preview from its beginning without a start: no offset is trusted.
  const third = new TailMapper(RUN, Date.now);
  third.feed(running("sevt_r1"), []);
  assert.deepEqual(
    feed(third, [delta("sevt_m2", "ab"), message("sevt_m2", "abcd")]).map(([id]) => id),
    ["sevt_m2"],
  );
  // A message of the same connection whose preview it saw start is logged as before.
  assert.deepEqual(
    feed(third, [start("sevt_m3"), delta("sevt_m3", "ab"), message("sevt_m3", "abcd")])
      .map(([id]) => id),
    ["sevt_m3#d0", "sevt_m3#d2", "sevt_m3"],
  );
});

Deno.test("tail mapper: events fed twice yield nothing the second time", () => {
  const mapper = new TailMapper(RUN, Date.now);
  const first = feed(mapper, history().slice(0, 4));
  assert.equal(first.length, 5);
  // The stream reconnects and repeats the last events before going on.
  const rest = feed(mapper, history().slice(2));
  assert.deepEqual(rest.map(([sourceId]) => sourceId), ["sevt_tr1", "sevt_i1"]);
  assert.deepEqual(feed(mapper, history()), [], "the whole history again: nothing");
  assert.equal(mapper.turn, 1, "a user.message fed twice counts once");
});

Deno.test("tail mapper: an event without an id (the stream's own error frame) is not logged", () => {
  const mapper = new TailMapper(RUN, Date.now);
  const streamError = () =>
    event({ type: "error", error: { type: "overloaded", message: "busy" } });
  // The log still opens with run.started, whatever comes first.
  assert.deepEqual(feed(mapper, [streamError()]), [
    ["run.started", { type: "run.started", runId: RUN }],
  ]);
  feed(mapper, [userMessage("sevt_u1"), running("sevt_r1")]);
  assert.deepEqual(feed(mapper, [streamError()]), []);
  assert.equal(mapper.position, "open", "the connection failed, not the run");
});

Deno.test("tail mapper: the turn and its position follow the events", () => {
  const mapper = new TailMapper(RUN, Date.now);
  assert.equal(mapper.turn, 0);
  assert.equal(mapper.position, "open");
  feed(mapper, [userMessage("sevt_u1"), running("sevt_r1")]);
  assert.deepEqual([mapper.turn, mapper.position], [1, "open"]);
  const waiting = feed(mapper, [
    event({
      type: "agent.tool_use",
      id: "sevt_t1",
      name: "bash",
      input: {},
      evaluated_permission: "ask",
    }),
    event({
      type: "session.status_idle",
      id: "sevt_i1",
      stop_reason: { type: "requires_action", event_ids: ["sevt_t1"] },
    }),
  ]);
  assert.deepEqual(waiting.at(-1), [
    "sevt_i1",
    { type: "run.status", runId: RUN, state: "requires_action" },
  ]);
  assert.equal(mapper.position, "waiting");
  feed(mapper, [running("sevt_r2")]);
  assert.equal(mapper.position, "open", "running again after the confirmation");
  // Interrupted: the turn's end is run.cancelled.
  const cancelled = feed(mapper, [
    event({ type: "user.interrupt", id: "sevt_x1" }),
    idle("sevt_i2"),
  ]);
  assert.deepEqual(cancelled, [["sevt_i2", { type: "run.cancelled", runId: RUN }]]);
  assert.deepEqual([mapper.turn, mapper.position], [1, "ended"]);
  // A follow-up opens turn 2; the session's termination fails it.
  feed(mapper, [userMessage("sevt_u2")]);
  assert.deepEqual([mapper.turn, mapper.position], [2, "open"]);
  const failed = feed(mapper, [event({ type: "session.status_terminated", id: "sevt_z1" })]);
  assert.deepEqual(failed.map(([, mapped]) => (mapped as { type: string }).type), ["run.failed"]);
  assert.equal(mapper.position, "ended");
});

Deno.test("tail mapper: a new mapper fed the whole history (a takeover) yields the same entries", () => {
  // The first tail saw the history in pieces, with a reconnect's overlap between them.
  const first = new TailMapper(RUN, Date.now);
  const events = history();
  const seen = [...feed(first, events.slice(0, 3)), ...feed(first, events.slice(1))];
  // The next tail reads the whole history from the start.
  const next = feed(new TailMapper(RUN, Date.now), history());
  assert.deepEqual(next, seen, "same source ids and events: the store skips them all");
});
