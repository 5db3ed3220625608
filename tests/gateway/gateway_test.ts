/**
 * The run gateway called directly, as an interface other than the HTTP routes would call it:
 * a `RunCall` rather than a request, the run's tail woken by the gateway itself, the public run
 * answered, time read from the injected clock, and a call's signal cutting its provider calls.
 */
import assert from "node:assert/strict";
import { ProviderManagedAgentClient } from "../../client/mod.ts";
import type { AuthenticatedPrincipal } from "../../server/context.ts";
import { InterfaceError } from "../../server/errors.ts";
import type { RunCall } from "../../server/runs/call.ts";
import { providerFailureOf } from "../../server/runs/provider_failure.ts";
import { RunGateway } from "../../server/runs/runs.ts";
import { openKvStore } from "../../server/store/kv/mod.ts";
import type { Store } from "../../server/store/types.ts";
import { FakeProvider } from "../support/fake_provider.ts";

const CLOCK = Date.parse("2030-01-02T03:04:05.000Z");

const principal: AuthenticatedPrincipal = {
  principalId: crypto.randomUUID(),
  capabilities: ["session:read", "session:write"],
  expiresAt: "2030-02-01T00:00:00.000Z",
  expiresAtMs: Date.parse("2030-02-01T00:00:00.000Z"),
  bootstrap: false,
  maxActiveRuns: 4,
};

function callOf(fields: Partial<RunCall> = {}): RunCall {
  return {
    principal,
    deadline: CLOCK + 30_000,
    correlationId: crypto.randomUUID(),
    at: CLOCK - 1_000,
    ...fields,
  };
}

interface Setup {
  fake: FakeProvider;
  store: Store;
  gateway: RunGateway;
  woken: string[];
  close(): Promise<void>;
}

async function setup(): Promise<Setup> {
  const apiKey = `sk-fake-${crypto.randomUUID()}`;
  const fake = await FakeProvider.start({ apiKey });
  // Turns last: runs stay `running` until cancelled.
  fake.managedAgents!.script = () => [{ delayMs: 600_000 }];
  const client = new ProviderManagedAgentClient({ baseUrl: fake.baseUrl, apiKey });
  const agent = await client.createAgent({ name: "worker", model: "model-small" });
  const environment = await client.createEnvironment({ name: "env" });
  const store = await openKvStore({ path: ":memory:", namespace: "gateway-test" });
  const gateway = new RunGateway({
    store,
    logger: { request() {}, info() {}, error() {}, flush() {} },
    settings: {
      apiKey,
      baseUrl: fake.baseUrl,
      defaultAgentId: agent.id as string,
      defaultEnvironmentId: environment.id as string,
    },
    client,
    now: () => CLOCK,
  });
  const woken: string[] = [];
  gateway.activity.subscribe((runId) => woken.push(runId));
  return {
    fake,
    store,
    gateway,
    woken,
    async close() {
      await store.close();
      await fake.close();
    },
  };
}

Deno.test("gateway: start, message and cancel wake the run's tail and answer the public run", async () => {
  const { gateway, store, woken, close } = await setup();
  try {
    const start = callOf();
    const run = await gateway.start(start, { input: "triage" });
    assert.deepEqual(woken, [run.runId], "the start woke the tail");
    assert.equal(run.state, "running");
    assert.equal(run.updatedAt, new Date(CLOCK).toISOString(), "the injected clock");
    assert.equal("turns" in run, false);

    const sent = await gateway.send(callOf(), run.runId, "and the tests");
    assert.equal(sent.state, "running");
    assert.equal("turns" in sent, false);
    assert.equal((await store.runs.get(run.runId))?.turns, 2);

    const cancel = callOf();
    const cancelled = await gateway.cancel(cancel, run.runId);
    assert.equal(cancelled.state, "cancelled");
    assert.equal(cancelled.endedAt, new Date(CLOCK).toISOString());
    assert.equal("cancelRequested" in cancelled, false);
    assert.deepEqual(woken, [run.runId, run.runId, run.runId]);

    const read = await gateway.get(callOf(), run.runId);
    assert.deepEqual(read, cancelled);
    const page = await gateway.list(callOf(), { limit: 10 });
    assert.deepEqual(page, { runs: [cancelled], nextCursor: null });

    // The audit entries carry each call's correlation id and time, and its principal.
    const audit = (await store.audit.list({ limit: 10 })).entries;
    const started = audit.find((entry) => entry.action === "run.started")!;
    assert.equal(started.correlationId, start.correlationId);
    assert.equal(started.at, new Date(start.at).toISOString());
    assert.equal(started.actorId, principal.principalId);
    const stopped = audit.find((entry) => entry.action === "run.cancelled")!;
    assert.equal(stopped.correlationId, cancel.correlationId);
  } finally {
    await close();
  }
});

Deno.test("gateway: a call whose signal fired is cut, releases its slot and leaves no session", async () => {
  const { gateway, store, fake, woken, close } = await setup();
  try {
    const gone = new AbortController();
    gone.abort();
    const error = await gateway.start(callOf({ signal: gone.signal }), { input: "hi" }).then(
      () => assert.fail("the start went through"),
      (error) => error,
    );
    assert.ok(error instanceof InterfaceError);
    assert.equal(error.code, "providerUnavailable");
    assert.equal(providerFailureOf(error)?.kind, "deadline");
    assert.equal(await store.runs.countSlots(principal.principalId, CLOCK), 0);
    assert.deepEqual(woken, [], "nothing to wake");
    // The provider made the session after the caller went: it is deleted, not left running.
    const deleted = () => fake.requests.filter((r) => r.method === "DELETE").length;
    for (let waited = 0; deleted() === 0 && waited < 10_000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(deleted(), 1);
    assert.equal(fake.managedAgents!.sessions.size, 0);
    const audit = (await store.audit.list({ limit: 10 })).entries;
    assert.deepEqual(audit.map((entry) => entry.outcome), ["providerUnavailable"]);
  } finally {
    await close();
  }
});

Deno.test("gateway: another principal's run is not found, whatever the call", async () => {
  const { gateway, close } = await setup();
  try {
    const run = await gateway.start(callOf(), { input: "mine" });
    const stranger = callOf({
      principal: { ...principal, principalId: crypto.randomUUID() },
    });
    for (
      const attempt of [
        () => gateway.get(stranger, run.runId),
        () => gateway.cancel(stranger, run.runId),
        () => gateway.send(stranger, run.runId, "x"),
        () => gateway.readableRun(stranger, run.runId),
      ]
    ) {
      await assert.rejects(attempt(), (error) => (error as InterfaceError).code === "runNotFound");
    }
    await gateway.cancel(callOf(), run.runId);
  } finally {
    await close();
  }
});
