/**
 * Where a run's log ends, as pages and resumed streams tell it (`event_page.ts`): a terminal entry
 * the run record has not taken in yet is answered once the record has (within
 * `RECORD_CATCH_UP_MS`), a record that took it in and is still active ran a follow-up, and a
 * record that never catches up is answered as it stands, without waiting longer.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { RunEventPage } from "../../wire/mod.ts";
import {
  endsFinishedRun,
  MAX_EVENT_PAGE_CHARS,
  readEventPage,
  RECORD_CATCH_UP_MS,
} from "../../server/runs/event_page.ts";
import type { RunEventEntry, Store, StoredRunRecord } from "../../server/store/types.ts";

/** A page as a caller reads it: the JSON text `readEventPage` answers, parsed. */
async function pageOf(options: Parameters<typeof readEventPage>[0]): Promise<RunEventPage> {
  return JSON.parse(await readEventPage(options));
}

const RUN = "sesn_page";

const LOG: RunEventEntry[] = [
  { seq: 1, at: "t1", sourceId: "run.started", event: { type: "run.started", runId: RUN } },
  {
    seq: 2,
    at: "t2",
    sourceId: "sevt_1",
    event: { type: "message.completed", runId: RUN, text: "hi" },
  },
  { seq: 3, at: "t3", sourceId: "sevt_2", event: { type: "run.completed", runId: RUN } },
];

function record(state: StoredRunRecord["state"], lastEventSeq: number): StoredRunRecord {
  return {
    runId: RUN,
    principalId: "p",
    agentId: "agent_1",
    environmentId: "env_1",
    state,
    lastEventSeq,
    createdAt: "t0",
    updatedAt: "t0",
  };
}

/** A store holding {@linkcode LOG} whose record reads answer `records` in turn (the last stays). */
function storeOf(...records: StoredRunRecord[]): { store: Store; reads: () => number } {
  let reads = 0;
  const store = {
    events: {
      list: (_: string, after: number, limit: number) =>
        Promise.resolve(LOG.filter((entry) => entry.seq > after).slice(0, limit)),
    },
    runs: {
      get: () => Promise.resolve(records[Math.min(reads++, records.length - 1)]),
    },
  } as unknown as Store;
  return { store, reads: () => reads };
}

Deno.test("event page: a turn's end the record has not taken in yet is answered once it has", async () => {
  // The tail appended run.completed (seq 3); its record write lands two reads later.
  const { store, reads } = storeOf(
    record("running", 2),
    record("running", 2),
    record("completed", 3),
  );
  const page = await pageOf({ store, runId: RUN, after: 1, limit: 100 });
  assert.deepEqual(page.events.map((event) => event.seq), [2, 3]);
  assert.equal(page.terminal, true);
  assert.equal(reads(), 3);

  // A stream resuming after the end reads the same way.
  const resumed = storeOf(record("running", 2), record("completed", 3));
  assert.equal(await endsFinishedRun({ store: resumed.store, runId: RUN, seq: 3 }), true);
  assert.equal(resumed.reads(), 2);
});

Deno.test("event page: a record that took the end in and is still active ran a follow-up: not terminal, no wait", async () => {
  const { store, reads } = storeOf(record("running", 3));
  const page = await pageOf({ store, runId: RUN, after: 0, limit: 100 });
  assert.equal(page.terminal, false);
  assert.equal(await endsFinishedRun({ store, runId: RUN, seq: 3 }), false);
  assert.equal(reads(), 2, "one read each");
  // A resume point past the end of an active run's log rests on no entry: no wait either.
  const past = storeOf(record("running", 3));
  assert.equal(await endsFinishedRun({ store: past.store, runId: RUN, seq: 9 }), false);
  assert.equal(past.reads(), 1);
});

Deno.test("event page: a record that never catches up is answered as it stands after RECORD_CATCH_UP_MS", async () => {
  const { store, reads } = storeOf(record("running", 2));
  const began = performance.now();
  const page = await pageOf({ store, runId: RUN, after: 2, limit: 100 });
  const took = performance.now() - began;
  assert.equal(page.terminal, false);
  assert.ok(took >= RECORD_CATCH_UP_MS - 5, `gave up after ${took.toFixed(0)} ms`);
  assert.ok(took < RECORD_CATCH_UP_MS + 1_000, `waited ${took.toFixed(0)} ms`);
  assert.ok(reads() <= 10, `${reads()} record reads`);
});

Deno.test("event page: a page of long entries stops at MAX_EVENT_PAGE_CHARS of JSON (one entry at least), is not terminal where it stops, and the pages after it hold the rest", async () => {
  // Two turns, the first ending (terminal) right where a page is cut: a reader must read on.
  const text = (fill: string, n: number) => fill.repeat(n);
  const log: RunEventEntry[] = [
    { seq: 1, at: "t", sourceId: "s1", event: { type: "run.started", runId: RUN } },
    ...[2, 3, 4].map((seq): RunEventEntry => ({
      seq,
      at: "t",
      sourceId: `s${seq}`,
      event: { type: "message.completed", runId: RUN, text: text("x", 1_500_000) },
    })),
    { seq: 5, at: "t", sourceId: "s5", event: { type: "run.completed", runId: RUN } },
    {
      seq: 6,
      at: "t",
      sourceId: "s6",
      event: { type: "message.completed", runId: RUN, text: text("中", 5_000_000) },
    },
    { seq: 7, at: "t", sourceId: "s7", event: { type: "run.completed", runId: RUN } },
  ];
  let listed = 0;
  const store = {
    events: {
      list: (_: string, after: number, limit: number) => {
        listed = Math.max(listed, limit);
        return Promise.resolve(log.filter((entry) => entry.seq > after).slice(0, limit));
      },
    },
    runs: { get: () => Promise.resolve(record("completed", 7)) },
  } as unknown as Store;
  const pages: { seqs: number[]; terminal: boolean }[] = [];
  for (let after = 0;;) {
    const page = await pageOf({ store, runId: RUN, after, limit: 500 });
    pages.push({ seqs: page.events.map((event) => event.seq), terminal: page.terminal });
    assert.ok(
      page.events.length === 1 || JSON.stringify(page.events).length <= MAX_EVENT_PAGE_CHARS + 2,
    );
    if (page.terminal || page.events.length === 0) break;
    after = page.nextAfter;
  }
  assert.deepEqual(pages, [
    { seqs: [1, 2, 3], terminal: false },
    { seqs: [4, 5], terminal: false },
    // Longer than a page alone: a page of its own.
    { seqs: [6], terminal: false },
    { seqs: [7], terminal: true },
  ]);
  // The store is asked for 100 entries at a time, not the 500 the page may hold.
  assert.equal(listed, 100);
});
