/**
 * JSON pages of a run's event log (`GET /v1/runs/{runId}/events` without `text/event-stream`, and
 * the MCP `run_events` tool through it), and the rule both pages and streams use to tell that the
 * log has nothing more to give: {@linkcode endsFinishedRun}.
 *
 * A page reads the store directly (one read, plus at most two more to settle `terminal`, and a
 * few more while the run record lags behind a terminal entry: below): pages hold nothing open, so
 * they share no feed with the streams.
 *
 * **The record has seen the end it is asked about.** The tail appends a turn's terminal entry,
 * then writes the run record that says the run ended (`tail.ts`, step 4): a reader that finds the
 * entry in that moment would read a record that does not know of it yet and answer "still going"
 * about a log that ends. So when the entry a reader rests on is terminal, its seq is past the
 * record's `lastEventSeq` and the record still says active, the reader reads the record again
 * until it has taken the entry in, for at most {@linkcode RECORD_CATCH_UP_MS} (the write
 * commits a few ms after the append; past the limit the record is answered as it stands). A record
 * that has taken the entry in and is still active ran a follow-up turn: the log has not ended. A
 * record whose write never came (the tail died or its write failed) is brought up to the log by
 * the run's next tail (`tail.ts`, step 2), which readers then find.
 *
 * @module
 */
import type { RunEventEntry, Store, StoredRunRecord } from "../store/types.ts";
import { ACTIVE_RUN_STATES } from "../store/types.ts";
import { isTerminalEntry, publicEvent } from "./public_event.ts";

/**
 * How long a reader that found a terminal entry the run record has not taken in yet waits for the
 * record, in ms (see the module doc). Under load the record's write commits within about 100 ms
 * of the append.
 */
export const RECORD_CATCH_UP_MS = 1_000;
/** The first wait before reading the record again, in ms; each next one is twice as long. */
const CATCH_UP_FIRST_MS = 5;

/**
 * Characters of JSON a page's events hold at most, past its first event (a page always holds one
 * when the log has one): a run's entries have no size bound of their own (a 1 MiB message, a long
 * reply), and 500 of them made a page of hundreds of megabytes. A page cut short says so only by
 * `nextAfter` and `terminal: false`; the caller reads on as from any page.
 */
export const MAX_EVENT_PAGE_CHARS = 4 * 1024 * 1024;
/**
 * Entries a page reads from the store at a time (here and in the provider interface's event
 * lists), so that a page cut by its size holds at most this many more in memory than it answers
 * with.
 */
export const EVENT_PAGE_READ = 100;

/** Options of {@linkcode readEventPage}. */
export interface EventPageOptions {
  /** The store holding the log. */
  store: Store;
  /** The run (already checked as visible to the caller). */
  runId: string;
  /** Entries after this seq. */
  after: number;
  /** Most entries. */
  limit: number;
  /** The run's record as read for this request: saves reading it again. */
  record?: StoredRunRecord;
  /** Characters of JSON the page's events hold at most (default {@linkcode MAX_EVENT_PAGE_CHARS}). */
  maxChars?: number;
}

/**
 * Up to `limit` entries after `after`, and whether the run has ended where they end, as the JSON
 * text of a page, `{events, nextAfter, terminal}` (what the response carries: each event is
 * serialized once); fewer entries when their JSON would pass `maxChars` (never none when the log
 * has one after `after`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { RunEventEntry, Store } from "../store/types.ts";
 * import { readEventPage } from "./event_page.ts";
 * const log: RunEventEntry[] = [
 *   { seq: 1, at: "2026-01-01T00:00:00Z", sourceId: "run.started", event: { type: "run.started", runId: "sesn_1" } },
 *   { seq: 2, at: "2026-01-01T00:00:01Z", sourceId: "sevt_1", event: { type: "run.cancelled", runId: "sesn_1" } },
 * ];
 * // The two store reads a page makes.
 * const store = {
 *   events: {
 *     list: (_runId: string, after: number, limit: number) =>
 *       Promise.resolve(log.filter((entry) => entry.seq > after).slice(0, limit)),
 *   },
 *   runs: { get: () => Promise.resolve({ state: "cancelled" }) },
 * } as unknown as Store;
 * const page = async (after: number, limit: number) =>
 *   JSON.parse(await readEventPage({ store, runId: "sesn_1", after, limit }));
 * assert.deepEqual(await page(0, 1), {
 *   events: [{ seq: 1, at: "2026-01-01T00:00:00Z", type: "run.started", runId: "sesn_1" }],
 *   nextAfter: 1,
 *   terminal: false,
 * });
 * const rest = await page(1, 100);
 * assert.deepEqual(rest.events.map((event: { type: string }) => event.type), ["run.cancelled"]);
 * assert.equal(rest.terminal, true, "the log ends at a terminal entry of a finished run");
 * assert.deepEqual(await page(2, 100), { events: [], nextAfter: 2, terminal: true });
 * ```
 */
export async function readEventPage(options: EventPageOptions): Promise<string> {
  const { store, runId, after, limit, record } = options;
  const maxChars = options.maxChars ?? MAX_EVENT_PAGE_CHARS;
  // Each event's JSON, or several events' joined by commas.
  const texts: string[] = [];
  let count = 0;
  let last: RunEventEntry | undefined;
  let chars = 0;
  // Whether the log ends where the page does: a read came back short.
  let ended = false;
  let cut = false;
  while (count < limit && !cut && !ended) {
    const want = Math.min(limit - count, EVENT_PAGE_READ);
    const entries = await store.events.list(runId, last?.seq ?? after, want);
    ended = entries.length < want;
    const events = entries.map(publicEvent);
    // Speed trick: the read's events serialized in one call, and one by one only when they do
    // not all fit. A call per event made a page of 100 short events 11 % slower to read and
    // serialize than before the size bound (145 against 131 µs over an in-memory Deno KV store,
    // pinned); one call a read, 132 µs.
    const whole = JSON.stringify(events);
    if (chars + whole.length <= maxChars) {
      if (events.length > 0) texts.push(whole.slice(1, -1));
      count += events.length;
      chars += whole.length;
      last = entries.at(-1) ?? last;
      continue;
    }
    for (let i = 0; i < events.length; i++) {
      const text = JSON.stringify(events[i]);
      if (count > 0 && chars + text.length > maxChars) {
        cut = true;
        break;
      }
      texts.push(text);
      count++;
      chars += text.length;
      last = entries[i];
    }
  }
  let terminal = false;
  if (ended && !cut) {
    terminal = last === undefined
      ? await endsFinishedRun({ store, runId, seq: after, record })
      : isTerminalEntry(last) && await runFinished(store, runId, last.seq, record);
  }
  const nextAfter = last?.seq ?? after;
  return `{"events":[${texts.join(",")}],"nextAfter":${nextAfter},"terminal":${terminal}}`;
}

/** Options of {@linkcode endsFinishedRun}. */
export interface EndsFinishedRunOptions {
  /** The store holding the log. */
  store: Store;
  /** The run. */
  runId: string;
  /** The seq a reader resumes after. */
  seq: number;
  /** The run's record as read for this request: saves reading it again. */
  record?: StoredRunRecord;
  /** Whether the entry `seq` is terminal, when known already (a window holding it): no read. */
  terminal?: boolean;
}

/**
 * Whether a reader resuming after `seq` has nothing to wait for while the run is finished (not
 * running a further turn): the entry there is terminal (log entries never change), or the log has
 * no entry there at all (a resume point past the log's end, which no stream ever handed out: a
 * finished run's log gains nothing until a further turn starts, so waiting would never end).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Store } from "../store/types.ts";
 * import { endsFinishedRun } from "./event_page.ts";
 * const log = [
 *   { seq: 1, at: "t", sourceId: "s1", event: { type: "run.completed", runId: "r" } },
 * ];
 * const store = {
 *   events: {
 *     list: (_: string, after: number) => Promise.resolve(log.filter((e) => e.seq > after)),
 *   },
 *   runs: { get: () => Promise.resolve({ state: "completed" }) },
 * } as unknown as Store;
 * assert.equal(await endsFinishedRun({ store, runId: "r", seq: 1 }), true);
 * assert.equal(await endsFinishedRun({ store, runId: "r", seq: 99 }), true, "past the end");
 * assert.equal(await endsFinishedRun({ store, runId: "r", seq: 0 }), false);
 * ```
 */
export async function endsFinishedRun(options: EndsFinishedRunOptions): Promise<boolean> {
  const { store, runId, seq, record } = options;
  if (seq <= 0) return false;
  let ends = options.terminal;
  let past = false;
  if (ends === undefined) {
    const entry = (await store.events.list(runId, seq - 1, 1))[0];
    past = entry === undefined;
    ends = past || isTerminalEntry(entry);
  }
  // Past the log's end there is no entry for the record to take in.
  return ends && await runFinished(store, runId, past ? 0 : seq, record);
}

/**
 * Whether the run is in a final state once its record has taken in the entry `seq` (see the
 * module doc): by `record` when given, else by reading it, and read again while it lags.
 */
async function runFinished(
  store: Store,
  runId: string,
  seq: number,
  record: StoredRunRecord | undefined,
): Promise<boolean> {
  let current = record ?? await store.runs.get(runId);
  if (lags(current, seq)) current = await catchUp(store, runId, seq);
  return current !== null && !ACTIVE_RUN_STATES.has(current.state);
}

/** Whether a record is active and has not taken in the entry `seq` yet. */
function lags(record: StoredRunRecord | null, seq: number): boolean {
  return record !== null && ACTIVE_RUN_STATES.has(record.state) && record.lastEventSeq < seq;
}

/**
 * The run's record once it has taken in the entry `seq`, or as it stands after
 * {@linkcode RECORD_CATCH_UP_MS}: read again after 5 ms, then after twice as long each time.
 */
async function catchUp(
  store: Store,
  runId: string,
  seq: number,
): Promise<StoredRunRecord | null> {
  const until = performance.now() + RECORD_CATCH_UP_MS;
  for (let wait = CATCH_UP_FIRST_MS;; wait *= 2) {
    const left = until - performance.now();
    await new Promise((resolve) => setTimeout(resolve, Math.max(Math.min(wait, left), 0)));
    const current = await store.runs.get(runId);
    if (!lags(current, seq) || left <= wait) return current;
  }
}
