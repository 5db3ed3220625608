/**
 * Turning the activity log into deliveries. Every replica runs a dispatcher; each pass, in order:
 *
 * 1. read the store's dispatch cursor (the activity seq turned into deliveries so far) and the
 *    next entries after it (up to 200);
 * 2. for each entry that is a notification event (`payload.ts`) and each active subscription
 *    that asks for it, was created before it (`startSeq`) and whose owner may read the run (the
 *    owner's own runs; every run for approvers and admins; nothing once the owner is revoked or
 *    expired), build the delivery: its id derived from the subscription and the entry, its body
 *    in the subscription's format;
 * 3. create the deliveries (an id that exists is skipped: replicas dispatching the same entries
 *    at once create each once), and wake this replica's sender;
 * 4. move the cursor past the entries, by compare-and-set: when another replica moved it first,
 *    read it again.
 *
 * A pass runs when the activity log grows (the store's watch) and every 5 s.
 *
 * @module
 */
import { sha256Hex } from "../digest.ts";
import type { RuntimeLogger } from "../log.ts";
import { Passes } from "./_passes.ts";
import { readsEveryRun } from "../runs/runs.ts";
import type {
  ActivityRecord,
  PrincipalRecord,
  Store,
  StoredDelivery,
  StoredSubscription,
} from "../store/types.ts";
import { bodyOf, eventOf, payloadOf } from "./payload.ts";

/** Entries one pass reads. */
const PAGE = 200;
/** Subscriptions one pass reads at most. */
const MAX_SUBSCRIPTIONS = 10_000;

/** Options of {@linkcode NotificationDispatcher}. */
export interface NotificationDispatcherOptions {
  /** The store. */
  store: Store;
  /** Log sink. */
  logger: RuntimeLogger;
  /** The bootstrap principal's id (it reads every run and has no principal record). */
  bootstrapPrincipalId: string;
  /** The clock, ms since the epoch. */
  now: () => number;
  /** The console's URL, linked from the deliveries (absent: none). */
  consoleUrl?: string;
  /** Pending deliveries a subscription may hold. */
  maxPending: number;
  /** Time between passes when nothing wakes it, in ms. */
  pollMs: number;
  /** Told when a pass created deliveries. */
  onEnqueued: () => void;
}

/**
 * The id of the delivery of activity entry `seq` to a subscription: `msg_` and 32 hex digits of
 * a digest of both, the same on every replica.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deliveryIdOf } from "./dispatcher.ts";
 * assert.equal(deliveryIdOf("sub_1", 7), deliveryIdOf("sub_1", 7));
 * assert.notEqual(deliveryIdOf("sub_1", 7), deliveryIdOf("sub_2", 7));
 * assert.match(deliveryIdOf("sub_1", 7), /^msg_[0-9a-f]{32}$/);
 * ```
 */
export function deliveryIdOf(subscriptionId: string, seq: number): string {
  return `msg_${sha256Hex(`${subscriptionId}:${seq}`).slice(0, 32)}`;
}

/** Which runs a subscription's owner may read: every run, its own, or none. */
export type OwnerReach = "all" | "own" | "none";

/**
 * Which runs the owner of a subscription may read at `now`: every run (the bootstrap principal,
 * approvers, admins), its own, or none (unknown, revoked, expired, or without `session:read`):
 * a revoked or expired owner's subscriptions get nothing more, neither new deliveries nor
 * further attempts of old ones.
 *
 * @example
 * ```ts ignore
 * const reach = await ownerReach(store, bootstrapPrincipalId, subscription.principalId, Date.now());
 * ```
 */
export async function ownerReach(
  store: Store,
  bootstrapPrincipalId: string,
  principalId: string,
  now: number,
): Promise<OwnerReach> {
  if (principalId === bootstrapPrincipalId) return "all";
  const record: PrincipalRecord | null = await store.principals.get(principalId);
  if (record === null || record.revokedAt !== null || Date.parse(record.expiresAt) <= now) {
    return "none";
  }
  if (!record.capabilities.includes("session:read")) return "none";
  return readsEveryRun({ capabilities: record.capabilities }) ? "all" : "own";
}

/** Turns the activity log into deliveries on this replica (see the module doc). */
export class NotificationDispatcher {
  readonly #options: NotificationDispatcherOptions;
  readonly #store: Store;
  #stopWatch: (() => void) | null = null;
  readonly #passes: Passes;

  /** Creates the dispatcher; {@linkcode NotificationDispatcher.start} starts it. */
  constructor(options: NotificationDispatcherOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#passes = new Passes(() => this.pass(), {
      pollMs: options.pollMs,
      logger: options.logger,
      failure: "notification dispatch failed",
    });
  }

  /** Starts watching the activity log and the periodic pass. */
  start(): void {
    if (this.#stopWatch !== null || this.#passes.stopped) return;
    this.#stopWatch = this.#store.activity.watch(() => this.wake());
    this.#passes.start();
  }

  /** Runs a pass soon (one at a time; a wake during a pass runs one more after it). */
  wake(): void {
    this.#passes.wake();
  }

  /** Dispatches every entry after the cursor (steps 1 to 4 of the module doc). */
  async pass(): Promise<void> {
    for (let rounds = 0; rounds < 100 && !this.#passes.stopped; rounds++) {
      const from = await this.#store.notifications.readCursor();
      const page = await this.#store.activity.list({ after: from, limit: PAGE });
      if (page.entries.length === 0) return;
      const events = page.entries.filter((entry) => eventOf(entry) !== null);
      if (events.length > 0) {
        const subscriptions = await this.#activeSubscriptions();
        if (subscriptions.length > 0) {
          const deliveries = await this.#deliveries(page.entries, events, subscriptions);
          if (deliveries.length > 0) {
            const created = await this.#store.notifications.enqueue(
              deliveries,
              this.#options.maxPending,
            );
            if (created > 0) this.#options.onEnqueued();
          }
        }
      }
      await this.#store.notifications.advanceCursor(from, page.last);
    }
  }

  async #activeSubscriptions(): Promise<StoredSubscription[]> {
    const active: StoredSubscription[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#store.notifications.listSubscriptions({
        limit: 100,
        ...(cursor !== undefined ? { cursor } : {}),
      });
      for (const subscription of page.items) {
        if (subscription.state === "active") active.push(subscription);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined && active.length < MAX_SUBSCRIPTIONS);
    return active;
  }

  /** Step 2: the deliveries of `events` (entries of `page`) to `subscriptions`. */
  async #deliveries(
    page: readonly ActivityRecord[],
    events: readonly ActivityRecord[],
    subscriptions: readonly StoredSubscription[],
  ): Promise<StoredDelivery[]> {
    const now = this.#options.now();
    const owners = new Map<string, Promise<OwnerReach>>();
    const reach = (principalId: string) => {
      let found = owners.get(principalId);
      if (found === undefined) {
        found = this.#reachOf(principalId, now);
        owners.set(principalId, found);
      }
      return found;
    };
    const runs = new Map<string, Promise<{ agentId?: string; title?: string }>>();
    const runOf = (runId: string) => {
      let found = runs.get(runId);
      if (found === undefined) {
        found = this.#store.runs.get(runId).then((record) => ({
          ...(record?.agentId !== undefined ? { agentId: record.agentId } : {}),
          ...(record?.title !== undefined ? { title: record.title } : {}),
        }));
        runs.set(runId, found);
      }
      return found;
    };
    const out: StoredDelivery[] = [];
    for (const entry of events) {
      const type = eventOf(entry)!;
      const wanting = subscriptions.filter((subscription) =>
        entry.seq > subscription.startSeq && subscription.events.includes(type)
      );
      if (wanting.length === 0) continue;
      // The requests of a wait are recorded right after its state change, in the same write.
      const pending = type === "run.requires_action"
        ? page.filter((other) =>
          other.seq > entry.seq && other.runId === entry.runId && other.type === "tool.pending"
        )
        : [];
      const payload = payloadOf(entry, {
        pending,
        run: await runOf(entry.runId),
        ...(this.#options.consoleUrl !== undefined ? { consoleUrl: this.#options.consoleUrl } : {}),
      })!;
      for (const subscription of wanting) {
        const sees = await reach(subscription.principalId);
        if (sees === "none" || (sees === "own" && entry.principalId !== subscription.principalId)) {
          continue;
        }
        out.push({
          deliveryId: deliveryIdOf(subscription.subscriptionId, entry.seq),
          subscriptionId: subscription.subscriptionId,
          eventType: type,
          runId: entry.runId,
          createdAt: new Date(now).toISOString(),
          state: "pending",
          attempts: [],
          nextAttemptAt: new Date(now).toISOString(),
          principalId: subscription.principalId,
          activitySeq: entry.seq,
          body: bodyOf(payload, subscription.format),
          createdMs: now,
          nextAttemptMs: now,
        });
      }
    }
    return out;
  }

  /** Which runs a subscription's owner may read now (`ownerReach`). */
  #reachOf(principalId: string, now: number): Promise<OwnerReach> {
    return ownerReach(this.#store, this.#options.bootstrapPrincipalId, principalId, now);
  }

  /** Stops the passes (a pass under way finishes). */
  async stop(): Promise<void> {
    this.#stopWatch?.();
    this.#stopWatch = null;
    await this.#passes.stop();
  }
}
