/**
 * JSON pages of a run's event log (`GET /v1/runs/{runId}/events` without `text/event-stream`, and
 * the MCP `run_events` tool through it), and the rule both pages and streams use to tell that the
 * log has nothing more to give: {@linkcode endsFinishedRun}.
 *
 * A page reads the store directly (one read, plus at most two more to settle `terminal`): pages
 * hold nothing open, so they share no feed with the streams.
 *
 * @module
 */
import type { Store, StoredRunRecord } from "../store/types.ts";
import type { RunEventPage } from "../../wire/mod.ts";
import { ACTIVE_RUN_STATES } from "../store/types.ts";
import { isTerminalEntry, publicEvent } from "./public_event.ts";

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
}

/**
 * Up to `limit` entries after `after`, and whether the run has ended where they end.
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
 * const first = await readEventPage({ store, runId: "sesn_1", after: 0, limit: 1 });
 * assert.deepEqual(first, {
 *   events: [{ seq: 1, at: "2026-01-01T00:00:00Z", type: "run.started", runId: "sesn_1" }],
 *   nextAfter: 1,
 *   terminal: false,
 * });
 * const rest = await readEventPage({ store, runId: "sesn_1", after: 1, limit: 100 });
 * assert.deepEqual(rest.events.map((event) => event.type), ["run.cancelled"]);
 * assert.equal(rest.terminal, true, "the log ends at a terminal entry of a finished run");
 * const past = await readEventPage({ store, runId: "sesn_1", after: 2, limit: 100 });
 * assert.deepEqual(past, { events: [], nextAfter: 2, terminal: true });
 * ```
 */
export async function readEventPage(options: EventPageOptions): Promise<RunEventPage> {
  const { store, runId, after, limit, record } = options;
  const entries = await store.events.list(runId, after, limit);
  const last = entries.at(-1);
  let terminal = false;
  if (entries.length < limit) {
    terminal = last === undefined
      ? await endsFinishedRun({ store, runId, seq: after, record })
      : isTerminalEntry(last) && await runFinished(store, runId, record);
  }
  return { events: entries.map(publicEvent), nextAfter: last?.seq ?? after, terminal };
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
  if (ends === undefined) {
    const entry = (await store.events.list(runId, seq - 1, 1))[0];
    ends = entry === undefined || isTerminalEntry(entry);
  }
  return ends && await runFinished(store, runId, record);
}

/** Whether the run is in a final state: by `record` when given, else by reading it. */
async function runFinished(
  store: Store,
  runId: string,
  record: StoredRunRecord | undefined,
): Promise<boolean> {
  const current = record ?? await store.runs.get(runId);
  return current !== null && !ACTIVE_RUN_STATES.has(current.state);
}
