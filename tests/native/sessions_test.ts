/**
 * The provider's own API through the gateway, with the vendor's SDK as the client: a session
 * created through it is a run of the caller (the same run on `/v1`, in the audit log), streams to
 * its end, and lists exactly what the provider holds for it; the caller's sessions are listed
 * newest first; the events a client sends go through the gateway (follow-ups, interrupts); its
 * tool requests wait in the `/v1` inbox; reading a session in a loop stays within a read budget,
 * and one principal's reads of its sessions are limited in number at once.
 */
import assert from "node:assert/strict";
import { askingSession, startNative, until, userMessage, writerSession } from "./_native.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

Deno.test("provider API: a session created with the SDK streams to its end and lists what the provider holds", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const { bearer, principalId, sdk, session } = await writerSession(native, {
      title: "triage",
      metadata: { team: "infra" },
      initial_events: [userMessage("Triage the open issues")],
    });
    // The provider's own session object, unchanged.
    const held = gateway.fake.managedAgents!.sessions.get(session.id)!;
    assert.equal(session.title, "triage");
    assert.deepEqual((session as Json).metadata, { team: "infra" });
    assert.equal((session as Json).agent.id, gateway.agentId);

    // The stream, opened after the session began, delivers the rest of the turn to its end.
    const stream = await sdk.beta.sessions.events.stream(session.id);
    const streamed: Json[] = [];
    for await (const event of stream) {
      streamed.push(event);
      if ((event as Json).type === "session.status_idle") break;
    }
    assert.equal(streamed.at(-1).stop_reason.type, "end_turn");

    // The list through the gateway equals the provider's history: ids, order, fields.
    const listed: Json[] = [];
    for await (const event of sdk.beta.sessions.events.list(session.id)) listed.push(event);
    assert.deepEqual(listed, held.events);
    // Streamed events are the provider's too, and a suffix of its history.
    assert.deepEqual(streamed, held.events.slice(held.events.length - streamed.length));
    // Pages, newest first, and a type filter.
    const newest = await sdk.beta.sessions.events.list(session.id, {
      limit: 2,
      order: "desc",
    } as never);
    assert.deepEqual(newest.data, held.events.slice(-2).reverse());
    const messages: Json[] = [];
    for await (
      const event of sdk.beta.sessions.events.list(session.id, {
        types: ["agent.message"],
        limit: 1,
      } as never)
    ) messages.push(event);
    assert.deepEqual(messages, held.events.filter((event) => event.type === "agent.message"));

    // The same run on /v1, owned by the caller, and in the audit log.
    const run = await gateway.request("GET", `/v1/runs/${session.id}`, { bearer });
    assert.equal(run.status, 200, run.text);
    assert.equal(run.json.principalId, principalId);
    assert.equal(run.json.title, "triage");
    await until(
      async () => (await gateway.store.runs.get(session.id))?.state === "completed",
      "the run ended",
    );
    const audit = await gateway.request("GET", `/v1/audit?principalId=${principalId}`);
    assert.ok(
      audit.json.entries.some((entry: Json) =>
        entry.action === "run.started" && entry.runId === session.id && entry.outcome === "ok"
      ),
      audit.text,
    );

    // Retrieve and list: the provider's session records.
    const retrieved = await sdk.beta.sessions.retrieve(session.id);
    assert.deepEqual(retrieved, held.record);
    const page = await sdk.beta.sessions.list();
    assert.deepEqual(page.data.map((s: Json) => s.id), [session.id]);
  } finally {
    await native.close();
  }
});

Deno.test("provider API: a reply longer than a store value (77,000 characters) is logged whole and its turn ends", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const text = "a long reply ".repeat(5_000) + "中".repeat(12_000);
    gateway.fake.managedAgents!.script = () => [
      { type: "agent.message", content: [{ type: "text", text }] },
    ];
    const { bearer, sdk, session } = await writerSession(native, {
      initial_events: [userMessage("Write at length")],
    });
    const listed = async (): Promise<Json[]> => {
      const events: Json[] = [];
      for await (const event of sdk.beta.sessions.events.list(session.id)) events.push(event);
      return events;
    };
    await until(
      async () => (await listed()).some((event) => event.type === "session.status_idle"),
      "the turn ends in the gateway's log",
      10_000,
    );
    const message = (await listed()).find((event) => event.type === "agent.message");
    assert.equal(message.content[0].text, text);
    // The run's own log holds the whole reply too.
    const page = await gateway.request("GET", `/v1/runs/${session.id}/events?limit=100`, {
      bearer,
    });
    assert.equal(page.status, 200, page.text);
    const events: Json[] = page.json.events;
    assert.equal(events.find((event) => event.type === "message.completed").text, text);
    assert.equal(
      events.filter((event) => event.type === "message.delta").map((event) => event.text).join(""),
      text,
    );
    assert.equal(events.at(-1).type, "run.completed");
  } finally {
    await native.close();
  }
});

Deno.test("provider API: a follow-up and an interrupt go through the gateway's run", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    // A session without a first turn waits idle (and holds an active-run slot meanwhile).
    const { sdk, session } = await writerSession(native);
    assert.equal((await gateway.store.runs.get(session.id))?.state, "completed");
    gateway.holdTurns(true);
    const sent = await sdk.beta.sessions.events.send(session.id, {
      events: [userMessage("Go on")],
    } as never);
    assert.equal((sent as Json).data[0].type, "user.message");
    assert.ok(typeof (sent as Json).data[0].id === "string", "the provider's recorded event");
    const woken = await gateway.store.runs.get(session.id);
    assert.equal(woken?.state, "running");
    assert.equal(woken?.turns, 1);
    const interrupted = await sdk.beta.sessions.events.send(session.id, {
      events: [{ type: "user.interrupt" }],
    } as never);
    assert.equal((interrupted as Json).data[0].type, "user.interrupt");
    assert.equal((await gateway.store.runs.get(session.id))?.state, "cancelled");
    const actions = (await gateway.request("GET", "/v1/audit")).json.entries.map((e: Json) =>
      e.action
    );
    assert.ok(actions.includes("run.message") && actions.includes("run.cancelled"), actions);
  } finally {
    await native.close();
  }
});

Deno.test("provider API: a session polled in a loop costs the provider one read a second; a change through the interface shows at once", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const { sdk, session } = await writerSession(native, { title: "first" });
    const reads = () =>
      gateway.fake.requests.filter((r) =>
        r.method === "GET" && r.path === `/v1/sessions/${session.id}`
      ).length;
    // Twenty clients at once, then twenty more in a row: one read from the provider.
    const together = await Promise.all(
      Array.from({ length: 20 }, () => sdk.beta.sessions.retrieve(session.id)),
    );
    for (let i = 0; i < 20; i++) await sdk.beta.sessions.retrieve(session.id);
    assert.ok(together.every((s: Json) => s.title === "first"));
    assert.equal(reads(), 1);
    // The list reads within the same budget.
    const listed = await sdk.beta.sessions.list();
    assert.deepEqual(listed.data.map((s: Json) => s.title), ["first"]);
    assert.equal(reads(), 1);
    // An update through the interface forgets the kept answer: the next read sees it.
    await sdk.beta.sessions.update(session.id, { title: "second" } as never);
    assert.equal((await sdk.beta.sessions.retrieve(session.id) as Json).title, "second");
    assert.equal(reads(), 2);
    // A second later the provider is read again.
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    await sdk.beta.sessions.retrieve(session.id);
    assert.equal(reads(), 3);
  } finally {
    await native.close();
  }
});

Deno.test("provider API: one principal's session lists read at most eight of its sessions from the provider at a time", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    // Thirty-two sessions waiting for their first turn: each holds one of its active-run slots.
    const { bearer } = await gateway.issue(["session:read", "session:write"], {
      maxActiveRuns: 32,
    });
    const sdk = native.sdk(bearer);
    for (let i = 0; i < 32; i++) {
      await sdk.beta.sessions.create({
        agent: gateway.agentId,
        environment_id: gateway.environmentId,
      } as never);
    }
    // The four pages of eight, by their cursors.
    const pages: (string | undefined)[] = [undefined];
    for (let i = 0; i < 3; i++) {
      const page = await sdk.beta.sessions.list({ limit: 8, page: pages[i] } as never);
      pages.push((page as Json).next_page);
    }
    // Each read of a session is held 300 ms: the reads that arrived meanwhile are the ones in
    // flight. The four pages at once, each read eight at a time, would be 32 reads in flight.
    const isRead = (r: { method: string; path: string }) =>
      r.method === "GET" && /^\/v1\/sessions\/[^/]+$/.test(r.path);
    await new Promise((resolve) => setTimeout(resolve, 1_050)); // past the kept answers
    gateway.fake.delayNext({ method: "GET", path: /^\/v1\/sessions\/[^/]+$/, ms: 300, times: 200 });
    const before = gateway.fake.requests.filter(isRead).length;
    const lists = Promise.all(
      pages.map((page) => sdk.beta.sessions.list({ limit: 8, page } as never)),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const inFlight = gateway.fake.requests.filter(isRead).length - before;
    assert.ok(inFlight >= 1 && inFlight <= 8, `${inFlight} reads in flight at once`);
    const listed = await lists;
    assert.deepEqual(listed.map((page) => (page as Json).data.length), [8, 8, 8, 8]);
    // Another principal is not held behind the first one's reads.
    const other = await writerSession(native);
    const started = Date.now();
    const mine = await other.sdk.beta.sessions.retrieve(other.session.id);
    assert.equal(mine.id, other.session.id);
    assert.ok(Date.now() - started < 2_000);
  } finally {
    await native.close();
  }
});

Deno.test("provider API: a session's tool request waits in the /v1 inbox until it is confirmed through the provider's API", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const approver = await gateway.issue(["session:read", "session:approve"]);
    const { session } = await askingSession(native);
    const inbox = async () => {
      const answer = await gateway.request("GET", "/v1/pending", { bearer: approver.bearer });
      assert.equal(answer.status, 200, answer.text);
      return answer.json.pending.filter((item: Json) => item.runId === session.id);
    };
    let waiting: Json[] = [];
    await until(async () => (waiting = await inbox()).length === 1, "the request in the inbox");
    assert.equal(waiting[0].name, "bash");
    await native.sdk(approver.bearer).beta.sessions.events.send(session.id, {
      events: [{
        type: "user.tool_confirmation",
        tool_use_id: waiting[0].toolUseId,
        result: "allow",
      }],
    } as never);
    await until(async () => (await inbox()).length === 0, "the request left the inbox");
  } finally {
    await native.close();
  }
});

Deno.test("provider API: an event list page holds at most 4 MiB of events past its first, and the SDK's pages go on from where one was cut", async () => {
  const native = await startNative();
  try {
    const { sdk, session } = await writerSession(native);
    // Six events of 1.5 MB (one of 5 M characters, longer than a page alone), among short ones,
    // logged as the tail logs what the provider sends.
    const big = (i: number, text: string) => ({
      id: `sevt_big_${i}`,
      type: "agent.message",
      json: JSON.stringify({
        type: "agent.message",
        id: `sevt_big_${i}`,
        content: [{ type: "text", text }],
        processed_at: "2026-01-01T00:00:00Z",
      }),
    });
    const logged = [
      ...[0, 1, 2, 3, 4].map((i) => big(i, "x".repeat(1_500_000))),
      big(5, "中".repeat(5_000_000)),
    ];
    await native.gateway.store.events.appendBatch(session.id, { events: [], native: logged });
    for (const order of ["asc", "desc"]) {
      const ids: string[] = [];
      const sizes: number[] = [];
      let page: string | undefined;
      for (;;) {
        const answer = await sdk.beta.sessions.events.list(session.id, {
          limit: 1000,
          order,
          ...(page === undefined ? {} : { page }),
        } as never) as unknown as Json;
        const data = answer.data as { id: string }[];
        ids.push(...data.map((event) => event.id));
        sizes.push(data.length === 1 ? 0 : JSON.stringify(data).length);
        if (answer.next_page === null || answer.next_page === undefined) break;
        page = answer.next_page as string;
      }
      const bigIds = logged.map((event) => event.id);
      assert.deepEqual(
        ids.filter((id) => id.startsWith("sevt_big_")),
        order === "asc" ? bigIds : bigIds.reverse(),
      );
      assert.equal(new Set(ids).size, ids.length);
      assert.ok(sizes.length >= 3, `${order}: ${sizes.length} pages`);
      assert.ok(sizes.every((size) => size <= 4 * 1024 * 1024 + 2), `${order}: ${sizes}`);
    }
  } finally {
    await native.close();
  }
});
