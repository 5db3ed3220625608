/**
 * Who may see and change which run, for the run gateway (`runs.ts`) and everything that reads
 * runs on a caller's behalf (tool answers, the inbox, the activity feed, notifications, the
 * provider's own API): a run is its owner's; admins see and change every run, approvers see every
 * run; anyone else is answered 404 `runNotFound`, never 403, so a run id tells a stranger nothing.
 *
 * @module
 */
import type { AuthenticatedPrincipal } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import type { Store, StoredRunRecord } from "../store/types.ts";
import { RUN_EVENT_RETENTION_MS } from "../store/run_event_types.ts";
import { ACTIVE_RUN_STATES } from "../../wire/mod.ts";

/** The 404 of a run the caller may not see, or that does not exist. */
export function runNotFound(): InterfaceError {
  return new InterfaceError("runNotFound", "No run with this id");
}

/**
 * Whether `caller` may read any principal's runs (admins and approvers).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readsEveryRun } from "./_run_access.ts";
 * assert.equal(readsEveryRun({ capabilities: ["session:approve"] }), true);
 * assert.equal(readsEveryRun({ capabilities: ["session:read"] }), false);
 * ```
 */
export function readsEveryRun(caller: Pick<AuthenticatedPrincipal, "capabilities">): boolean {
  return caller.capabilities.includes("authority:admin") ||
    caller.capabilities.includes("session:approve");
}

/** What deciding a run's visibility needs of a caller. */
type Caller = Pick<AuthenticatedPrincipal, "principalId" | "capabilities">;

/**
 * Whether `caller` may see (`read`) or change (`write`) a run of `owner`: read (and tool
 * confirmations) for its owner, admins and approvers; write for its owner and admins.
 */
function mayAccess(
  owner: string,
  caller: Caller,
  access: "read" | "write",
): boolean {
  return owner === caller.principalId || caller.capabilities.includes("authority:admin") ||
    (access === "read" && caller.capabilities.includes("session:approve"));
}

/**
 * Reads a run `caller` may see, else 404 `runNotFound`: `read` (and tool confirmations) for its
 * owner, admins and approvers; `write` for its owner and admins. No provider call.
 */
export async function visibleRun(
  store: Store,
  caller: AuthenticatedPrincipal,
  runId: string,
  access: "read" | "write",
): Promise<StoredRunRecord> {
  if (runId.length === 0 || runId.length > 256) throw runNotFound();
  const record = await store.runs.get(runId);
  if (record === null || !mayAccess(record.principalId, caller, access)) throw runNotFound();
  return record;
}

/** How long a replica answers who owns a run from a record it read, in ms. */
export const KNOWN_OWNER_MS = 60_000;
/** Most run owners a replica remembers; past it the oldest goes. */
export const MAX_KNOWN_OWNERS = 10_000;
/** Room for replicas' clocks that disagree, against the runs' retention. */
const CLOCK_MARGIN_MS = 3_600_000;

/**
 * The owners of the runs this replica read lately, so that a stream of a run's events (a
 * subscriber that reconnects, a hundred following one run) is let in without a store read:
 * 100 subscribers replaying a finished run each read its record before, one store read per
 * request on the store's one thread, and the replica delivered 0.52x to 0.70x of a peer writing
 * the same bytes; answered from here, 0.88x to 1.07x (`bench/events_bench.ts --only delivery`,
 * three alternating runs each).
 *
 * What makes it safe: a run's owner never changes, and the only way a run stops existing is the
 * retention purge, which takes runs that ended at least 7 days ago (`RUN_EVENT_RETENTION_MS`). An
 * owner is remembered for {@linkcode KNOWN_OWNER_MS} from its record's read, timed on the
 * monotonic clock (a wall clock stepped back does not stretch it), and only when the run cannot be
 * purged in that time on any replica: it was active, or it ended recently enough by the wall clock
 * (an hour of margin for replicas' clocks). Who may see the run is decided per request by the
 * caller's capabilities, as {@linkcode visibleRun} does; a revoked bearer never gets this far.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { KnownOwners } from "./_run_access.ts";
 * let monotonic = 0;
 * const owners = new KnownOwners({ monotonic: () => monotonic });
 * owners.remember({ runId: "sesn_1", principalId: "p", state: "running" as const }, Date.now());
 * const caller = { principalId: "p", capabilities: ["session:read"] as const };
 * assert.equal(owners.visible(caller, "sesn_1"), true);
 * assert.equal(owners.visible({ ...caller, principalId: "q" }, "sesn_1"), false);
 * monotonic += 60_000;
 * assert.equal(owners.visible(caller, "sesn_1"), undefined, "forgotten");
 * ```
 */
export class KnownOwners {
  readonly #owners = new Map<string, { principalId: string; until: number }>();
  readonly #max: number;
  readonly #monotonic: () => number;

  /**
   * Creates the memory, of at most `max` runs (default {@linkcode MAX_KNOWN_OWNERS}), timed on
   * `monotonic` (default `performance.now`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { KnownOwners } from "./_run_access.ts";
   * assert.equal(new KnownOwners({ max: 2 }).size, 0);
   * ```
   */
  constructor(options: { max?: number; monotonic?: () => number } = {}) {
    this.#max = options.max ?? MAX_KNOWN_OWNERS;
    this.#monotonic = options.monotonic ?? (() => performance.now());
  }

  /** Runs remembered. */
  get size(): number {
    return this.#owners.size;
  }

  /**
   * Remembers the owner of a record just read from the store, when the run cannot be purged
   * within {@linkcode KNOWN_OWNER_MS} of `now` (the wall clock, ms since the epoch).
   */
  remember(
    record: Pick<StoredRunRecord, "runId" | "principalId" | "state" | "endedAt">,
    now: number,
  ): void {
    if (record.endedAt !== undefined && !ACTIVE_RUN_STATES.has(record.state)) {
      const ended = Date.parse(record.endedAt);
      if (!(now + KNOWN_OWNER_MS < ended + RUN_EVENT_RETENTION_MS - CLOCK_MARGIN_MS)) return;
    }
    const owners = this.#owners;
    owners.delete(record.runId);
    if (owners.size >= this.#max) owners.delete(owners.keys().next().value!);
    owners.set(record.runId, {
      principalId: record.principalId,
      until: this.#monotonic() + KNOWN_OWNER_MS,
    });
  }

  /**
   * Whether `caller` may read the run, by its remembered owner: undefined when the run is not
   * remembered (or no longer: read its record then).
   */
  visible(caller: Caller, runId: string): boolean | undefined {
    const known = this.#owners.get(runId);
    if (known === undefined) return undefined;
    if (this.#monotonic() >= known.until) {
      this.#owners.delete(runId);
      return undefined;
    }
    return mayAccess(known.principalId, caller, "read");
  }
}
