/**
 * The activity part of the store (`store.activity`): the namespace's activity log, an
 * append-only sequence of changes across runs (a run created or changing state, a tool request
 * pending or answered), numbered by one `seq` that increases in the order entries became
 * visible, without gaps, even when replicas append at once: a reader that saw entry `n` never
 * sees an entry below `n` appear later. The activity feed (`GET /v1/activity`) and the inbox
 * (`GET /v1/pending`) read it; it is the small cross-run index of changes, not a second run
 * event log (a tool's input is kept only on `tool.pending`, at most 16 KiB of it).
 *
 * Writes of other parts whose change an entry reports carry it into their own atomic step:
 * `RunStore.create` (`run.created`), `RunStore.update` (`run.state`, `tool.pending`) and
 * `AnswerStore.complete` (`tool.answered`). {@linkcode ActivityStore.append} appends on its own
 * (the tail's `tool.pending` entries when the run record had nothing to change).
 *
 * Each input may carry a `key`, unique within its run: an input whose key the run's log holds
 * already is skipped (a tail that takes a run over announces its pending requests again).
 * Entries are kept 7 days (purged with the run event logs).
 *
 * @module
 */
import type {
  ActivityEvent,
  RunCreatedActivity,
  RunStateActivity,
  ToolAnsweredActivity,
  ToolPendingActivity,
} from "../../wire/mod.ts";

/** Most bytes of a tool input's JSON an entry keeps; a longer one is kept cut (`inputTruncated`). */
export const MAX_ACTIVITY_INPUT_BYTES = 16 * 1024;

/**
 * Most entries a list filtered by principal looks at in one call (its `last` then says how far it
 * looked), so a reader of a busy log is answered in bounded time.
 */
export const ACTIVITY_SCAN_LIMIT = 1_000;

/** How long activity entries are kept: 7 days, like the run event logs. */
export const ACTIVITY_RETENTION_MS = 7 * 86_400_000;

/** What only the store keeps of an entry. */
export interface StoredActivityFields {
  /** Unique within the run: an input whose key the run's log holds is skipped. */
  key?: string;
}

/** A `tool.pending` entry as stored: with the tool's input (cut past 16 KiB of JSON). */
export interface StoredToolPending extends ToolPendingActivity, StoredActivityFields {
  /** The tool's input, or the text of its first 16 KiB of JSON when `inputTruncated`. */
  input: unknown;
  /** Whether `input` was cut. */
  inputTruncated?: boolean;
}

/** An activity entry as stored. */
export type ActivityRecord =
  | (RunCreatedActivity & StoredActivityFields)
  | (RunStateActivity & StoredActivityFields)
  | StoredToolPending
  | (ToolAnsweredActivity & StoredActivityFields);

/** `Omit` over each member of a union. */
export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** An entry before the store gives it its `seq`. */
export type ActivityInput = DistributiveOmit<ActivityRecord, "seq">;

/** Parameters of {@linkcode ActivityStore.list}. */
export interface ActivityListParams {
  /** Entries after this seq. */
  after: number;
  /** Most entries answered (1 to 1000). */
  limit: number;
  /** Only entries of runs this principal owns; absent: every entry. */
  principalId?: string;
}

/** A page of {@linkcode ActivityStore.list}. */
export interface ActivityPage {
  /** The entries, in seq order. */
  entries: ActivityRecord[];
  /**
   * The highest seq the page covers: the next page starts after it. With a `principalId`, it
   * passes the entries of other principals' runs that were skipped.
   */
  last: number;
}

/** The activity log of the store's namespace. */
export interface ActivityStore {
  /**
   * Appends `inputs` (skipping those whose `key` their run's log holds) and returns the entries
   * appended, numbered. Wakes the watchers on every replica.
   */
  append(inputs: readonly ActivityInput[]): Promise<ActivityRecord[]>;
  /**
   * Entries after a seq, in order, at most `limit` (see {@linkcode ActivityPage.last}); with a
   * `principalId`, of the next {@linkcode ACTIVITY_SCAN_LIMIT} entries at most.
   */
  list(params: ActivityListParams): Promise<ActivityPage>;
  /** The latest `limit` entries of one run (1 to 1000), oldest first. */
  listRun(runId: string, limit: number): Promise<ActivityRecord[]>;
  /** The seq of the newest entry (0 when the log is empty). */
  head(): Promise<number>;
  /**
   * Calls `listener` (soon, not necessarily at once) whenever the log may have grown, on any
   * replica, with the newest seq when the backend knows it. Returns the function that stops
   * watching. Best effort: poll as well.
   */
  watch(listener: (last?: number) => void): () => void;
  /** Deletes the entries older than `before` (RFC 3339); returns how many went. */
  purge(before: string): Promise<number>;
}

/**
 * The public form of an entry: the store's `key`, and a pending request's input, left out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publicActivity } from "./activity.ts";
 * const event = publicActivity({
 *   seq: 3, at: "2026-01-01T00:00:00.000Z", type: "tool.pending", runId: "sesn_1",
 *   principalId: "p", toolUseId: "sevt_1", kind: "confirmation", name: "bash",
 *   requestedAt: "2026-01-01T00:00:00.000Z", deniedAt: "2026-01-01T00:10:00.000Z",
 *   input: { command: "ls" }, key: "pending:sevt_1",
 * });
 * assert.equal("input" in event, false);
 * assert.equal("key" in event, false);
 * ```
 */
export function publicActivity(record: ActivityRecord): ActivityEvent {
  if (record.type === "tool.pending") {
    const { key: _key, input: _input, inputTruncated: _cut, ...rest } = record;
    return rest;
  }
  const { key: _key, ...rest } = record;
  return rest;
}

/**
 * A tool input as a `tool.pending` entry keeps it: whole when its JSON is at most
 * {@linkcode MAX_ACTIVITY_INPUT_BYTES}, else the text of its first bytes, marked cut.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { boundedInput } from "./activity.ts";
 * assert.deepEqual(boundedInput({ q: 1 }), { input: { q: 1 } });
 * const cut = boundedInput({ text: "x".repeat(40_000) });
 * assert.equal(cut.inputTruncated, true);
 * assert.ok((cut.input as string).length <= 16 * 1024);
 * ```
 */
export function boundedInput(input: unknown): { input: unknown; inputTruncated?: true } {
  const json = JSON.stringify(input ?? {});
  const bytes = new TextEncoder().encode(json);
  if (bytes.length <= MAX_ACTIVITY_INPUT_BYTES) return { input: input ?? {} };
  // Cut on a character boundary: a decoder drops a trailing partial character.
  const text = new TextDecoder().decode(bytes.subarray(0, MAX_ACTIVITY_INPUT_BYTES));
  return { input: text.replace(/\uFFFD$/, ""), inputTruncated: true };
}
