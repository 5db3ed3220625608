/**
 * One idempotency key, one effect at the provider (issue 34, items 8, 10 and 11): a follow-up
 * message reaches the provider at most once per key, also when the store fails after the send
 * and the caller retries; a start that crashed after recording its run, or while opening its
 * session, never opens a second session under its key; and a percent-encoded path parameter is
 * the same key scope as the plain one.
 *
 * The store is wrapped in process (`faultyStore`): calls can be slowed down, a part method can
 * fail, and a "crash" freezes every store call of one replica from a chosen moment on (a replica
 * that died there), while another replica over the same store answers the retries.
 */
import assert from "node:assert/strict";
import { openKvStore } from "../../server/store/kv/mod.ts";
import { type Store, StoreUnavailableError } from "../../server/store/types.ts";
import { assertCode, type Gateway, startGateway } from "./_harness.ts";

/** Switches of {@linkcode faultyStore}. */
interface Faults {
  /** Pause before every call, up to this many ms (random). */
  slowMs: number;
  /** Makes a call of `part.method` fail with a store error when it answers true. */
  fail?: (name: string) => boolean;
  /** Set: every call from now on waits for this promise, then fails (the replica is gone). */
  frozen?: Promise<void>;
  /** Called after each call of `part.method` settled successfully. */
  after?: (name: string) => void;
}

/** `inner` with every part method going through `faults`. */
function faultyStore(inner: Store, faults: Faults): Store {
  const wrapPart = (partName: string, part: object) =>
    new Proxy(part, {
      get(target, property) {
        const value = Reflect.get(target, property, target);
        if (typeof value !== "function") return value;
        const name = `${partName}.${String(property)}`;
        return async (...args: unknown[]) => {
          if (faults.frozen !== undefined) {
            await faults.frozen;
            throw new StoreUnavailableError("the replica is gone");
          }
          if (faults.slowMs > 0) {
            await new Promise((resolve) => setTimeout(resolve, Math.random() * faults.slowMs));
          }
          if (faults.fail?.(name)) throw new StoreUnavailableError("injected store failure");
          const result = await value.apply(target, args);
          faults.after?.(name);
          return result;
        };
      },
    });
  return {
    ...inner,
    principals: wrapPart("principals", inner.principals),
    idempotency: wrapPart("idempotency", inner.idempotency),
    authority: wrapPart("authority", inner.authority),
    runs: wrapPart("runs", inner.runs),
    audit: wrapPart("audit", inner.audit),
    events: wrapPart("events", inner.events),
    answers: wrapPart("answers", inner.answers),
    close: () => inner.close(),
  } as Store;
}

/** The texts of the user messages the fake provider received for `runId`. */
function messagesAt(gateway: Gateway, runId: string): string[] {
  return gateway.fake.requests
    .filter((r) => r.method === "POST" && r.path === `/v1/sessions/${runId}/events`)
    .flatMap((r) => (r.body as { events: { content: { text: string }[] }[] }).events)
    .map((event) => event.content[0].text);
}

function sessionCreations(gateway: Gateway): number {
  return gateway.fake.requests.filter((r) => r.method === "POST" && r.path === "/v1/sessions")
    .length;
}

Deno.test("at most once: 60 concurrent follow-ups over a slow, failing store, with retries", async (t) => {
  const faults: Faults = { slowMs: 0 };
  const gateway = await startGateway({
    store: async (namespace) =>
      faultyStore(await openKvStore({ path: ":memory:", namespace }), faults),
  });
  gateway.holdTurns(true);
  try {
    const started = await gateway.request("POST", "/v1/runs", { body: { input: "kickoff" } });
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;

    await t.step("a slow, healthy store: all 60 answered 202, each sent once", async () => {
      faults.slowMs = 5;
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          gateway.request("POST", `/v1/runs/${runId}/messages`, {
            body: { input: `a-${i}` },
          })),
      );
      assert.deepEqual(answers.filter((a) => a.status !== 202).map((a) => a.text), []);
      const sent = messagesAt(gateway, runId).filter((text) => text.startsWith("a-"));
      assert.equal(sent.length, 60);
      assert.equal(new Set(sent).size, 60);
    });

    await t.step("the store fails after sends; every 5xx is retried with its key", async () => {
      // A third of the record writes fail: the message went out, the run's record did not move.
      faults.fail = (name) => name === "runs.update" && Math.random() < 1 / 3;
      const keys = Array.from({ length: 60 }, (_, i) => ({ key: crypto.randomUUID(), i }));
      const outcomes = await Promise.all(keys.map(async ({ key, i }) => {
        for (let attempt = 0; attempt < 8; attempt++) {
          const answer = await gateway.request("POST", `/v1/runs/${runId}/messages`, {
            key,
            body: { input: `b-${i}` },
          });
          const code = answer.json?.error?.code;
          if (answer.status < 500 && code !== "idempotencyInFlight") return answer;
          if (attempt === 3) faults.fail = undefined;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        throw new Error(`b-${i} never settled`);
      }));
      const sent = messagesAt(gateway, runId).filter((text) => text.startsWith("b-"));
      const counts = new Map<string, number>();
      for (const text of sent) counts.set(text, (counts.get(text) ?? 0) + 1);
      assert.deepEqual([...counts].filter(([, n]) => n > 1), [], "a message sent twice");
      for (const [index, answer] of outcomes.entries()) {
        if (answer.status === 202) {
          assert.equal(counts.get(`b-${index}`), 1);
        } else {
          // The send happened, the record did not follow: the key is spent, not reopened.
          assertCode(answer, 409, "idempotencyUnsettled");
          assert.equal(counts.get(`b-${index}`), 1);
        }
      }
    });
  } finally {
    faults.fail = undefined;
    faults.slowMs = 0;
    await gateway.close();
  }
});

/** How far the second replica's clock is ahead: past every claim's lease of the first. */
const LATER_MS = 10 * 60_000;

/**
 * Two replicas over one in-memory store: `a`'s store calls go through `faults`, so it can
 * "crash" (`crash()`: every later store call of its hangs); `b`, whose clock is `LATER_MS`
 * ahead, answers the retries. `retry` sends a start with `b`'s deadline; `close` lets `a`'s
 * frozen calls fail, waits for `a`'s request still open, and closes both.
 */
async function crashableReplicas(): Promise<{
  a: Gateway;
  b: Gateway;
  inner: () => Store;
  faults: Faults;
  crash(): void;
  retry(key: string, body: unknown): ReturnType<Gateway["request"]>;
  close(pending: Promise<unknown>): Promise<void>;
}> {
  const faults: Faults = { slowMs: 0 };
  let inner: Store | null = null;
  const freeze = Promise.withResolvers<void>();
  const a = await startGateway({
    store: async (namespace) => {
      inner = await openKvStore({ path: ":memory:", namespace });
      return faultyStore(inner, faults);
    },
  });
  const b = await startGateway({
    replicaOf: a,
    store: () => Promise.resolve({ ...inner!, close: () => Promise.resolve() }),
    serverOptions: { now: () => Date.now() + LATER_MS },
  });
  a.holdTurns(true);
  return {
    a,
    b,
    inner: () => inner!,
    faults,
    crash() {
      faults.frozen = freeze.promise;
    },
    retry: (key, body) =>
      b.request("POST", "/v1/runs", {
        key,
        body,
        headers: { "x-deadline": new Date(Date.now() + LATER_MS + 60_000).toISOString() },
      }),
    async close(pending) {
      freeze.resolve();
      await pending;
      await b.close();
      await a.close();
    },
  };
}

Deno.test("at most once: a start that crashed never opens a second session under its key", async (t) => {
  const key = crypto.randomUUID();
  const body = { input: "start once" };

  await t.step("a crash right after the run was recorded: the retry finds the run", async () => {
    const replicas = await crashableReplicas();
    const { a } = replicas;
    replicas.faults.after = (name) => {
      if (name === "runs.create") replicas.crash();
    };
    const first = a.request("POST", "/v1/runs", { key, body });
    try {
      // Wait for the run's record: the first replica is frozen from then on.
      let runs: { runId: string }[] = [];
      for (let i = 0; i < 300 && runs.length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        runs = (await replicas.inner().runs.list({ limit: 10 })).runs;
      }
      assert.equal(runs.length, 1);
      const retry = await replicas.retry(key, body);
      assert.equal(retry.status, 201, retry.text);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.equal(retry.json.runId, runs[0].runId);
      assert.equal(sessionCreations(a), 1);
    } finally {
      await replicas.close(first);
    }
  });

  await t.step("a crash while the session was opened: the retry opens none", async () => {
    const replicas = await crashableReplicas();
    const { a } = replicas;
    // The provider holds the creation's answer; the replica dies while it waits for it.
    a.fake.delayNext({ method: "POST", path: "/v1/sessions", ms: 300 });
    const first = a.request("POST", "/v1/runs", { key, body });
    try {
      for (let i = 0; i < 300 && sessionCreations(a) === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      assert.equal(sessionCreations(a), 1);
      replicas.crash();
      assertCode(await replicas.retry(key, body), 409, "idempotencyUnsettled");
      assert.equal(sessionCreations(a), 1);
    } finally {
      await replicas.close(first);
    }
  });
});

Deno.test("at most once: a percent-encoded run id is the same idempotency scope", async () => {
  const gateway = await startGateway();
  gateway.holdTurns(true);
  try {
    const started = await gateway.request("POST", "/v1/runs", { body: { input: "kickoff" } });
    const runId: string = started.json.runId;
    const key = crypto.randomUUID();
    const body = { input: "follow up once" };
    const first = await gateway.request("POST", `/v1/runs/${runId}/messages`, { key, body });
    assert.equal(first.status, 202, first.text);
    const encoded = `%${runId.charCodeAt(0).toString(16)}${runId.slice(1)}`;
    const again = await gateway.request("POST", `/v1/runs/${encoded}/messages`, { key, body });
    assert.equal(again.status, 202, again.text);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(messagesAt(gateway, runId).filter((text) => text === body.input), [
      body.input,
    ]);
  } finally {
    await gateway.close();
  }
});
