/**
 * The provider's own API on two replicas sharing PostgreSQL (in process, each served over HTTP),
 * with the vendor's SDK as the client: twenty concurrent confirmations of one tool use give one
 * answer at the provider and nineteen `ConflictError`s the SDK does not retry; a native stream
 * read on one replica resumes on the other with `Last-Event-ID`, without gap or duplicate; and
 * revoking the principal ends its open native streams within a second, its next call an
 * `AuthenticationError`.
 */
import assert from "node:assert/strict";
import Vendor from "@anthropic-ai/sdk";
import { readSse } from "../../client/sse.ts";
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { startGateway } from "../gateway/_harness.ts";
import { createTestDatabase, ignorePostgresTests, skipNote } from "../support/postgres.ts";
import { askingSession, isA, serveGateway, userMessage } from "./_native.ts";

type Served = ReturnType<typeof serveGateway>;
// deno-lint-ignore no-explicit-any
type Json = any;

async function twoReplicas(url: string): Promise<[Served, Served]> {
  const store = (namespace: string) => openPostgresStore({ url, namespace });
  const a = await startGateway({ store });
  const b = await startGateway({ store, replicaOf: a });
  return [serveGateway(a), serveGateway(b)];
}

async function closeAll(replicas: Served[]): Promise<void> {
  for (const replica of [...replicas].reverse()) {
    await replica.stop();
    await replica.gateway.close();
  }
}

/** A native event stream read frame by frame: `id`, `event` and the event's JSON. */
async function openNative(
  replica: Served,
  bearer: string,
  sessionId: string,
  lastEventId?: string,
): Promise<{ frames: AsyncIterator<{ id: string; event: string; data: Json }>; close(): void }> {
  const controller = new AbortController();
  const response = await fetch(`${replica.url}/provider/v1/sessions/${sessionId}/events/stream`, {
    headers: {
      "x-api-key": bearer,
      accept: "application/json",
      ...(lastEventId !== undefined ? { "last-event-id": lastEventId } : {}),
    },
    signal: controller.signal,
  });
  assert.equal(response.status, 200);
  async function* frames() {
    for await (const message of readSse(response.body!, { signal: controller.signal })) {
      yield { id: message.id ?? "", event: message.event ?? "", data: JSON.parse(message.data) };
    }
  }
  return { frames: frames(), close: () => controller.abort() };
}

Deno.test({
  name:
    `provider API replicas: twenty concurrent confirmations give one answer and nineteen ConflictErrors, not retried${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const replicas = await twoReplicas(db.url);
    const [a, b] = replicas;
    try {
      const fake = a.gateway.fake;
      const approver = await a.gateway.issue(["session:read", "session:approve"]);
      const { session, toolUseId } = await askingSession(a);
      const before = a.received.length + b.received.length;
      const results = await Promise.all(
        Array.from(
          { length: 20 },
          (_, i) =>
            (i % 2 === 0 ? a : b).sdk(approver.bearer).beta.sessions.events.send(session.id, {
              events: [{
                type: "user.tool_confirmation",
                tool_use_id: toolUseId,
                result: "allow",
              }],
            } as never).then((answer) => ({ answer }), (error) => ({ error })),
        ),
      );
      const answered = results.filter((result) => "answer" in result);
      const conflicts = results.filter((result) =>
        "error" in result && result.error instanceof Vendor.ConflictError
      );
      assert.equal(
        answered.length,
        1,
        JSON.stringify(results.map((r) => "error" in r && String(r.error))),
      );
      assert.equal(conflicts.length, 19);
      for (const conflict of conflicts) {
        const error = (conflict as { error: Json }).error;
        assert.equal(error.error.error.type, "conflict_error");
        assert.equal(error.headers.get("x-should-retry"), "false");
      }
      assert.equal(
        a.received.length + b.received.length - before,
        20,
        "twenty requests: the SDK retried none",
      );
      const confirmations = fake.requests.filter((request) =>
        request.method === "POST" && request.path === `/v1/sessions/${session.id}/events`
      ).flatMap((request) => (request.body as { events: Json[] }).events)
        .filter((event) => event.type === "user.tool_confirmation");
      assert.equal(confirmations.length, 1, "one confirmation reached the provider");
      // The one answer is the provider's recorded event.
      const recorded = (answered[0] as { answer: Json }).answer.data;
      assert.equal(recorded[0].type, "user.tool_confirmation");
      assert.equal(recorded[0].tool_use_id, toolUseId);
    } finally {
      await closeAll(replicas);
    }
  },
});

Deno.test({
  name:
    `provider API replicas: a native stream resumes on the other replica with Last-Event-ID, no gap, no duplicate${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const replicas = await twoReplicas(db.url);
    const [a, b] = replicas;
    try {
      a.gateway.fake.managedAgents!.script = ({ text }) =>
        Array.from({ length: 8 }, (_, i) => [
          { delayMs: 40 },
          { type: "agent.message", content: [{ type: "text", text: `${text} ${i + 1}` }] },
        ]).flat();
      const { bearer } = await a.gateway.issue(["session:read", "session:write"]);
      const session = await a.sdk(bearer).beta.sessions.create({
        agent: a.gateway.agentId,
        environment_id: a.gateway.environmentId,
      } as never);
      const first = await openNative(a, bearer, session.id);
      await a.sdk(bearer).beta.sessions.events.send(session.id, {
        events: [userMessage("part")],
      } as never);
      const seen: { id: string; data: Json }[] = [];
      while (seen.length < 4) {
        const next = await first.frames.next();
        assert.ok(!next.done);
        seen.push(next.value);
      }
      first.close();
      // The other replica, from the last id this stream sent.
      const second = await openNative(b, bearer, session.id, seen.at(-1)!.id);
      while (seen.at(-1)!.data.type !== "session.status_idle") {
        const next = await second.frames.next();
        assert.ok(!next.done);
        seen.push(next.value);
      }
      second.close();
      const held = a.gateway.fake.managedAgents!.sessions.get(session.id)!.events;
      assert.deepEqual(seen.map((frame) => frame.data), held, "the provider's events, each once");
      assert.deepEqual(
        seen.map((frame) => Number(frame.id)),
        seen.map((_, i) => i + 1),
        "ids without gaps",
      );
    } finally {
      await closeAll(replicas);
    }
  },
});

Deno.test({
  name:
    `provider API replicas: revoking the principal ends its native streams within 1 s; its next call is an AuthenticationError${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await using db = await createTestDatabase();
    const replicas = await twoReplicas(db.url);
    const [a, b] = replicas;
    try {
      a.gateway.holdTurns(true);
      const doomed = await a.gateway.issue(["session:read", "session:write"]);
      const session = await a.sdk(doomed.bearer).beta.sessions.create({
        agent: a.gateway.agentId,
        environment_id: a.gateway.environmentId,
        initial_events: [userMessage("wait")],
      } as never);
      const onA = await a.sdk(doomed.bearer).beta.sessions.events.stream(session.id);
      const onB = await b.sdk(doomed.bearer).beta.sessions.events.stream(session.id);
      const ended = [onA, onB].map(async (stream) => {
        for await (const _ of stream) {
          // read until the gateway ends the stream
        }
        return Date.now();
      });
      // Both streams are open once their headers came; give the re-check a moment to run.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const revoked = await b.gateway.request("DELETE", `/v1/principals/${doomed.principalId}`);
      assert.equal(revoked.status, 204, revoked.text);
      const at = Date.now();
      const times = await Promise.all(ended);
      for (const time of times) assert.ok(time - at <= 1_000, `ended ${time - at} ms after`);
      const next = await a.sdk(doomed.bearer).beta.sessions.list().catch((error) => error);
      assert.ok(isA(next, Vendor.AuthenticationError), String(next));
    } finally {
      await closeAll(replicas);
    }
  },
});
