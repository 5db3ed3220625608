/**
 * The vendor SDK's own session tool runner (`client.beta.sessions.events.toolRunner`) drives a
 * session with custom tools through the gateway to its end: it streams from the gateway, reads
 * the history from the gateway, and answers through the gateway's claim path. Each tool result
 * reaches the provider exactly once, also when the provider drops the gateway's upstream stream
 * twice mid-run (the runner's own stream, served from the run's log, never notices).
 */
import assert from "node:assert/strict";
import type { Json } from "../support/fake_provider.ts";
import { startNative, userMessage, writerSession } from "./_native.ts";

/** Three custom tool calls in a row, one per turn, then a closing message. */
function scriptThreeLookups(native: Awaited<ReturnType<typeof startNative>>): void {
  const state = native.gateway.fake.managedAgents!;
  const call = (n: number) => ({
    type: "agent.custom_tool_use",
    name: "lookup",
    input: { n },
  });
  state.script = () => [{ delayMs: 20 }, call(1)];
  state.continuation = ({ events }) => {
    const answered = events.filter((event) => event.type === "user.custom_tool_result").length;
    if (answered >= 3) {
      return [{ type: "agent.message", content: [{ type: "text", text: "All looked up" }] }];
    }
    return [
      { type: "agent.message", content: [{ type: "text", text: `Looked up ${answered}` }] },
      { delayMs: 20 },
      call(answered + 1),
    ];
  };
}

Deno.test("provider API: the SDK's tool runner drives a session to its end, each result sent once, through two dropped upstream streams", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    scriptThreeLookups(native);
    const fake = gateway.fake;
    const state = fake.managedAgents!;
    // The provider drops the tail's first stream mid-run; when it does, the next stream (the
    // tail's reconnection) is set to drop too.
    let emitted = 0;
    let secondArmed = false;
    state.onEmit = () => {
      emitted++;
      if (emitted === 5 && !secondArmed) {
        secondArmed = true;
        fake.dropNextStream({ afterFrames: 3 });
      }
    };
    fake.dropNextStream({ afterFrames: 4 });

    const { sdk, session } = await writerSession(native, {
      initial_events: [userMessage("Look three things up")],
    });

    const runs: number[] = [];
    const lookup = {
      type: "custom",
      name: "lookup",
      description: "Looks a number up",
      input_schema: { type: "object", properties: { n: { type: "number" } } },
      run(input: { n: number }) {
        runs.push(input.n);
        return `found ${input.n}`;
      },
    };
    const dispatched: Json[] = [];
    const runner = sdk.beta.sessions.events.toolRunner(session.id, {
      tools: [lookup] as never,
      maxIdleMs: 400,
      signal: AbortSignal.timeout(20_000),
    });
    for await (const call of runner) dispatched.push(call as unknown as Json);

    assert.deepEqual(runs, [1, 2, 3], "each tool ran once, in order");
    assert.deepEqual(dispatched.map((call) => call.posted), [true, true, true]);
    // The provider got each result exactly once.
    const results = fake.requests.filter((request) =>
      request.method === "POST" && request.path === `/v1/sessions/${session.id}/events`
    ).flatMap((request) => (request.body as { events: Json[] }).events)
      .filter((event) => event.type === "user.custom_tool_result");
    const uses = state.sessions.get(session.id)!.events.filter((event) =>
      event.type === "agent.custom_tool_use"
    );
    assert.equal(uses.length, 3);
    assert.deepEqual(results.map((event) => event.custom_tool_use_id), uses.map((use) => use.id));
    assert.equal(secondArmed, true, "the second drop was armed");
    const streams = fake.requests.filter((request) =>
      request.path === `/v1/sessions/${session.id}/events/stream`
    );
    assert.ok(streams.length >= 3, `the tail reconnected twice (${streams.length} streams)`);
    // The session ended, and the gateway's run with it.
    const last = state.sessions.get(session.id)!.events.at(-1)!;
    assert.equal(last.type, "session.status_idle");
    assert.deepEqual(last.stop_reason, { type: "end_turn" });
    // Each answer was recorded by the gateway's claim path.
    const answers = await gateway.store.answers.list(session.id);
    assert.deepEqual(
      answers.map((answer) => [answer.toolUseId, answer.state, answer.kind]).sort(),
      uses.map((use) => [use.id, "answered", "custom_tool"]).sort(),
    );
  } finally {
    await native.close();
  }
});
