/**
 * The cross-run inbox (`GET /v1/pending`): every tool request that waits for an answer in a run
 * the caller may read (approvers and admins: every run; others: their own), served from the store
 * alone, never one provider call per run.
 *
 * A page, in order:
 *
 * 1. read the activity log's newest seq (the page's `activitySeq`: a client following the
 *    activity feed after it misses no change made once the page was read);
 * 2. list the runs in `requires_action` the caller may read, newest first (`limit` runs, from
 *    `cursor`);
 * 3. for each run, read its latest activity entries ({@linkcode RUN_WINDOW}) and keep the
 *    `tool.pending` entries of its current wait that no `tool.answered` entry answered (a
 *    `run.state` entry to any other state closes what came before it);
 * 4. add the run's title and agent, its owner and the owner's name (read once per principal),
 *    and the time the runtime answers each request by itself (`deniedAt`).
 *
 * The tail of each run writes a wait's `tool.pending` entries in the same store write as the
 * run's move to `requires_action`, and an answer's `tool.answered` entry is written with the
 * answer: the inbox is as current as the store.
 *
 * @module
 */
import type { AuthenticatedPrincipal } from "../context.ts";
import type { ActivityRecord, Store, StoredRunRecord, StoredToolPending } from "../store/types.ts";
import type { InboxItem, InboxPage } from "../../wire/mod.ts";
import { deniedAtOf } from "./pending.ts";
import { readsEveryRun } from "./runs.ts";

/** A run's latest activity entries the inbox reads. */
export const RUN_WINDOW = 200;
/** Runs of a page when `limit` is absent. */
export const DEFAULT_INBOX_RUNS = 50;
/** Most runs of a page. */
export const MAX_INBOX_RUNS = 100;

/** Options of {@linkcode readInbox}. */
export interface ReadInboxOptions {
  /** The store. */
  store: Store;
  /** The caller. */
  principal: AuthenticatedPrincipal;
  /** Runs per page (1 to {@linkcode MAX_INBOX_RUNS}). */
  limit: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  /** The pending timeout (`deniedAt`). */
  pendingTimeoutMs: number;
}

/**
 * The `tool.pending` entries of a run's latest entries that still wait, in the order they were
 * made: those after the last move out of `requires_action` (or the run's creation) that no
 * `tool.answered` entry answered.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openRequests } from "./inbox.ts";
 * const base = { at: "", runId: "r", principalId: "p" };
 * const pending = (seq: number, toolUseId: string) => ({
 *   ...base, seq, type: "tool.pending" as const, toolUseId, kind: "confirmation" as const,
 *   name: "bash", requestedAt: "", deniedAt: "", input: {},
 * });
 * const open = openRequests([
 *   pending(1, "old"),
 *   { ...base, seq: 2, type: "run.state", state: "running", previousState: "requires_action" },
 *   pending(3, "a"),
 *   pending(4, "b"),
 *   { ...base, seq: 5, type: "tool.answered", toolUseId: "a", kind: "confirmation",
 *     result: "allow", answeredBy: "p" },
 * ]);
 * assert.deepEqual(open.map((entry) => entry.toolUseId), ["b"]);
 * ```
 */
export function openRequests(entries: readonly ActivityRecord[]): StoredToolPending[] {
  const open = new Map<string, StoredToolPending>();
  for (const entry of entries) {
    if (entry.type === "tool.pending") open.set(entry.toolUseId, entry);
    else if (entry.type === "tool.answered") open.delete(entry.toolUseId);
    else if (entry.type === "run.created" || entry.state !== "requires_action") open.clear();
  }
  return [...open.values()];
}

/**
 * One page of the inbox (steps 1 to 4 of the module doc).
 *
 * @example
 * ```ts ignore
 * const page = await readInbox({ store, principal, limit: 50, pendingTimeoutMs: 600_000 });
 * ```
 */
export async function readInbox(options: ReadInboxOptions): Promise<InboxPage> {
  const { store, principal } = options;
  const activitySeq = await store.activity.head();
  const runs = await store.runs.list({
    state: "requires_action",
    limit: options.limit,
    ...(options.cursor !== undefined ? { cursor: options.cursor } : {}),
    ...(readsEveryRun(principal) ? {} : { principalId: principal.principalId }),
  });
  const names = new Map<string, Promise<string | undefined>>();
  const nameOf = (principalId: string): Promise<string | undefined> => {
    let name = names.get(principalId);
    if (name === undefined) {
      name = principalId === principal.principalId
        ? Promise.resolve(principal.name)
        : store.principals.get(principalId).then((record) => record?.name ?? undefined);
      names.set(principalId, name);
    }
    return name;
  };
  const perRun = await Promise.all(runs.runs.map(async (run) => {
    const open = openRequests(await store.activity.listRun(run.runId, RUN_WINDOW));
    if (open.length === 0) return [];
    const principalName = await nameOf(run.principalId);
    return open.map((entry) => itemOf(run, entry, principalName, options.pendingTimeoutMs));
  }));
  return { pending: perRun.flat(), nextCursor: runs.nextCursor, activitySeq };
}

function itemOf(
  run: StoredRunRecord,
  entry: StoredToolPending,
  principalName: string | undefined,
  pendingTimeoutMs: number,
): InboxItem {
  return {
    runId: run.runId,
    toolUseId: entry.toolUseId,
    kind: entry.kind,
    name: entry.name,
    input: entry.input,
    ...(entry.inputTruncated === true ? { inputTruncated: true } : {}),
    requestedAt: entry.requestedAt,
    deniedAt: deniedAtOf(entry.requestedAt, pendingTimeoutMs),
    ...(run.title !== undefined ? { title: run.title } : {}),
    agentId: run.agentId,
    principalId: run.principalId,
    ...(principalName !== undefined ? { principalName } : {}),
  };
}
