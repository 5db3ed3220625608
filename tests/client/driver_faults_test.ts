/**
 * 1,000 seeded random sessions driven with faults against the same sessions driven without. The
 * faults: streams cut at random byte offsets (inside frames and UTF-8 characters, as errors and as
 * clean ends), random chunking, duplicated frames, replayed frames at reconnect, failing opens and
 * lists, answers that fail before they are recorded and answers recorded whose response is lost.
 * Set `DRIVER_FAULT_RUNS` to run more or fewer seeds and `DRIVER_FAULT_SEED` to replay one.
 */
import assert from "node:assert/strict";
import {
  driveManagedAgentSession,
  type ManagedAgentDriverHandlers,
} from "../../client/managed_agents/driver.ts";
import type {
  ConfirmToolParams,
  RespondCustomToolParams,
} from "../../client/managed_agents/types.ts";
import {
  type Faults,
  randomScript,
  ScriptedSession,
  type ScriptEnd,
  seededRandom,
} from "./_scripted_session.ts";

const RUNS = Number(Deno.env.get("DRIVER_FAULT_RUNS") ?? 1000);
const ONLY_SEED = Deno.env.get("DRIVER_FAULT_SEED");

interface Setup {
  withConfirm: boolean;
  withCustom: boolean;
}

interface RunRecord {
  trace: string[];
  userEvents: string[];
  handledIds: string[];
  outcome: string;
  session: ScriptedSession;
}

/** The answer a request must get, from its tool name and which handlers exist. */
function expectedAnswer(
  kind: "confirm" | "custom",
  toolUseId: string,
  name: string,
  input: unknown,
  setup: Setup,
): ConfirmToolParams | RespondCustomToolParams {
  if (kind === "confirm") {
    if (!setup.withConfirm) return { toolUseId, result: "deny" };
    if (name.startsWith("throwing")) {
      return {
        toolUseId,
        result: "deny",
        denyMessage: "The client's tool confirmation handler failed",
      };
    }
    if (name.startsWith("dangerous")) {
      return { toolUseId, result: "deny", denyMessage: `no ${name}` };
    }
    return { toolUseId, result: "allow" };
  }
  if (!setup.withCustom) {
    return {
      toolUseId,
      content: [{ type: "text", text: "This client has no handler for custom tools" }],
      isError: true,
    };
  }
  if (name.startsWith("throwing") || name.startsWith("bad")) {
    return {
      toolUseId,
      content: [{ type: "text", text: "The client's custom tool handler failed" }],
      isError: true,
    };
  }
  return { toolUseId, content: [{ type: "text", text: `${name}:${JSON.stringify(input)}` }] };
}

function handlersFor(
  setup: Setup,
  record: Omit<RunRecord, "outcome" | "session">,
): ManagedAgentDriverHandlers {
  const { trace, userEvents, handledIds } = record;
  const handlers: ManagedAgentDriverHandlers = {
    onEvent(event) {
      if (event.id !== undefined) handledIds.push(event.id);
      if (event.type.startsWith("user.")) userEvents.push(event.id ?? "?");
      else trace.push(`event ${event.id} ${event.type}`);
    },
    async onMessage(text) {
      await Promise.resolve();
      trace.push(`message ${text}`);
    },
    onOutcomeEvaluation(event) {
      trace.push(`outcome ${event.outcomeId} ${event.result}`);
    },
    onThreadEvent(event) {
      trace.push(`thread ${event.kind} ${event.threadId}`);
    },
    onComplete() {
      trace.push("complete");
    },
    onError(error) {
      trace.push(`error ${error.reason}`);
    },
  };
  if (setup.withConfirm) {
    handlers.onToolConfirmation = async ({ toolUseId, name, sessionThreadId }) => {
      trace.push(`confirm ${toolUseId} ${name} ${sessionThreadId ?? "-"}`);
      await Promise.resolve();
      if (name.startsWith("throwing")) throw new Error("handler bug");
      if (name.startsWith("dangerous")) return { result: "deny", denyMessage: `no ${name}` };
      return { result: "allow" };
    };
  }
  if (setup.withCustom) {
    handlers.onCustomTool = ({ toolUseId, name, input }) => {
      trace.push(`custom ${toolUseId} ${name}`);
      if (name.startsWith("throwing")) throw new Error("tool bug");
      if (name.startsWith("bad")) return { content: "not an array" } as never;
      return { content: [{ type: "text", text: `${name}:${JSON.stringify(input)}` }] };
    };
  }
  return handlers;
}

async function drive(
  seed: number,
  faults: Faults | undefined,
): Promise<RunRecord> {
  const random = seededRandom(seed);
  const steps = randomScript(random, 5 + Math.floor(random() * 30));
  const end: ScriptEnd = random() < 0.5 ? "end_turn" : "terminated";
  const setup: Setup = { withConfirm: random() < 0.85, withCustom: random() < 0.85 };
  const session = new ScriptedSession(steps, { end, faults, seed: seed * 7919 + 1 });
  const record = { trace: [] as string[], userEvents: [] as string[], handledIds: [] as string[] };
  const result = await driveManagedAgentSession(session, "sesn_1", handlersFor(setup, record), {
    // The invariants under test are dedupe and answering; giving up is tested on its own.
    maxReconnects: 1000,
    minReconnectDelayMs: 0,
    maxReconnectDelayMs: 1,
    signal: AbortSignal.timeout(10_000),
  });

  // Every request was answered exactly once, with the answer its handler (or the default) gives.
  const requests = session.log.filter((e) =>
    (e.type === "agent.tool_use" && e.evaluated_permission === "ask") ||
    e.type === "agent.custom_tool_use"
  );
  for (const request of requests) {
    const id = request.id as string;
    const answers = session.answers.get(id) ?? [];
    assert.equal(answers.length, 1, `seed ${seed}: ${id} answered ${answers.length} times`);
    const kind = request.type === "agent.custom_tool_use" ? "custom" : "confirm";
    const expected = expectedAnswer(kind, id, request.name as string, request.input, setup);
    if (request.session_thread_id !== undefined) {
      (expected as ConfirmToolParams).sessionThreadId = request.session_thread_id as string;
    }
    assert.deepEqual(answers[0], expected, `seed ${seed}: answer to ${id}`);
  }
  assert.equal(session.doubleAnswers, 0, `seed ${seed}: a tool use was answered twice`);
  assert.equal(session.openStreams, 0, `seed ${seed}: a stream was left open`);
  return { ...record, outcome: result.outcome, session };
}

const PROFILES: Faults[] = [
  {
    openFail: 0.1,
    listFail: 0.1,
    cut: 0.5,
    cutMaxBytes: 4000,
    cutAsEof: 0.3,
    duplicate: 0.2,
    overlap: 4,
    sendFailBefore: 0.15,
    sendFailAfter: 0.15,
    maxChunk: 97,
  },
  {
    openFail: 0.05,
    listFail: 0.05,
    cut: 0.8,
    cutMaxBytes: 600,
    cutAsEof: 0.5,
    duplicate: 0.5,
    overlap: 10,
    sendFailBefore: 0.3,
    sendFailAfter: 0.3,
    maxChunk: 7,
  },
  {
    openFail: 0,
    listFail: 0,
    cut: 0.3,
    cutMaxBytes: 20_000,
    cutAsEof: 0,
    duplicate: 0.05,
    overlap: 2,
    sendFailBefore: 0.05,
    sendFailAfter: 0.05,
    maxChunk: 4096,
  },
];

Deno.test(`driver under faults: ${RUNS} seeded runs match their fault-free runs`, async () => {
  const seeds = ONLY_SEED === undefined
    ? Array.from({ length: RUNS }, (_, i) => i + 1)
    : [Number(ONLY_SEED)];
  let reconnects = 0;
  let faultySends = 0;
  for (const seed of seeds) {
    const clean = await drive(seed, undefined);
    const faults = PROFILES[seed % PROFILES.length];
    const faulty = await drive(seed, faults);

    for (const run of [clean, faulty]) {
      assert.equal(run.outcome, "terminal", `seed ${seed}: drive did not reach the end`);
      // No event handled twice, and every event of the session handled.
      assert.equal(new Set(run.handledIds).size, run.handledIds.length, `seed ${seed}: duplicate`);
      assert.deepEqual(
        [...run.handledIds].sort(),
        run.session.log.map((e) => e.id as string).sort(),
        `seed ${seed}: events handled differ from the session's events`,
      );
      assert.equal(run.trace.filter((t) => t === "complete").length, 1);
      assert.equal(run.trace.at(-1), "complete");
    }
    // Apart from where the echoes of answers fall, the handler trace is the fault-free one.
    assert.deepEqual(faulty.trace, clean.trace, `seed ${seed}: trace differs`);
    assert.deepEqual(
      [...faulty.userEvents].sort(),
      [...clean.userEvents].sort(),
      `seed ${seed}: answer echoes differ`,
    );
    reconnects += faulty.session.calls.open - 1;
    faultySends += faulty.session.calls.send - clean.session.calls.send;
  }
  // The faults really happened (the test would prove nothing otherwise).
  if (ONLY_SEED === undefined && RUNS >= 100) {
    assert.ok(reconnects > RUNS, `only ${reconnects} reconnects`);
    assert.ok(faultySends > RUNS / 10, `only ${faultySends} retried sends`);
  }
});
