/**
 * Run tails: exactly one replica follows each active run's provider session and appends its
 * events to the run's log in the store.
 *
 * A replica tails a run only while it holds the run's lease in the store (renewed every 5 s,
 * lapsing 15 s after the last renewal). A tail, in order:
 *
 * 1. opens the provider's event stream (with text deltas), so nothing emitted from now on is
 *    missed;
 * 2. re-lists the session's whole history and feeds it through the mapping (`_tail_mapper.ts`),
 *    appending as it goes: the store skips provider event ids the log already holds, so only
 *    what an earlier tail missed is appended; then brings the run record up to the log when it
 *    lags behind it (an earlier tail died, or its record write failed, after appending entries:
 *    a turn's end the record does not show would keep the run active, with its slot, and
 *    readers waiting for it): the entries past the record's `lastEventSeq` go through the same
 *    rules as an append's (step 4), each with the turn the history places it in;
 * 3. reads the stream, feeding and appending its events as they come (ids fed before are
 *    skipped). Appends are grouped adaptively (`_append_queue.ts`): one runs at a time and takes
 *    everything fed until it starts, so an event that comes alone is appended at once and a
 *    burst that comes while a durable commit is in flight goes in the next append together,
 *    while the tail reads and maps on (at most {@linkcode MAX_PENDING} run entries, and about
 *    4 Mi characters of events and text, wait: past that the provider's stream waits unread;
 *    the text deltas of one message that wait together are merged into one);
 * 4. after each append (of the run events and, in the same store write, the provider events
 *    themselves to the native log), hands the appended entries to this replica's subscribers
 *    (`onAppend`, `onAppendNative`; native entries go with the run entries of their batch) and
 *    brings the run record up to date by the rules of `run_state.ts` (`state`, `stopReason`,
 *    `usage`, `lastEventSeq`, `endedAt`; a terminal state frees the run's active slot in the same
 *    store write). The entries before
 *    a batch's first `run.status` or terminal entry are handed over at once; that entry and the
 *    ones after it once the record shows it. A batch with neither changes only `lastEventSeq`,
 *    which is written at most once per {@linkcode RECORD_DELAY_MS}, right after an append, and
 *    once the log has been quiet that long: each streamed event then costs the store one commit,
 *    not two;
 * 5. records the tool requests that wait for an answer (a `ToolRequestTracker` of `pending.ts`
 *    is fed every event): a batch that moves the run to `requires_action` writes their
 *    `tool.pending` activity entries in the same store write as the run record, and a tail that
 *    finds the run waiting after re-listing its history announces them again (their keys make
 *    that a no-op when they are recorded already: a takeover never loses one);
 * 6. stops once the latest turn ended (its last significant event is terminal): the lease is
 *    released; a follow-up message wakes the run again;
 * 7. on a broken stream or a provider failure, waits (0.5 s, doubling to 5 s) and goes back to 1;
 *    a session the provider no longer knows (`provider_failure.ts`) ends the run as `failed`.
 *
 * Spend (the rules: `spend.ts`; the tail's part: `_tail_spend.ts`): after each append, every
 * point where a turn waited for a tool answer or ended is settled with the usage the provider
 * reported by then (`store.spend.settle`: a wait moves what was spent from the turn's hold to
 * `spent`, an end also gives the rest of the hold back), once per growth whichever replica or
 * tail settles it; the run record shows the latest list cost (`listCost`). A turn that ended because its session reached its budget is audited
 * (`budget.exhausted`). The tail also keeps the run's time limit: when the run's
 * `timeLimitAt` passes while it is active, the tail interrupts its session and marks it
 * `cancelled` with `stopReason: "timeLimit"`, then follows it to the provider's end as usual.
 *
 * Runs reach a tail three ways: the gateway notifies {@linkcode RunActivity} (start, message,
 * cancel; the tool answers and webhooks too) and this replica tries the lease at once; every
 * replica scans the active runs every 5 s and takes any whose lease is free or lapsed (a replica
 * that died is replaced within 20 s, and runs started before a restart resume), and the finished
 * runs that still hold money (a cancelled turn whose end nobody saw settle), and runs with a
 * lapsed hold of a turn they never recorded (a follow-up whose replica died around its send: the
 * tail settles that turn when the history has it, and gives the hold back when not); and a tail
 * whose lease renewal is refused stops. A tail whose renewals fail (a store that does not answer)
 * starts no append and stops once its lease may lapse within a fifth of its length
 * (`#leaseSure`): the replica that takes the run over then never appends beside it, as long as
 * the two replicas' clocks disagree by less than that fifth. Past that the store fences: every
 * append names this replica as the lease's holder, and the store refuses it (writing nothing)
 * once another holder took the lease; the tail then stops as if a renewal had been refused.
 *
 * One concept past 600 lines on purpose: the steps above share one tail's state (its lease, its
 * append queue, the record it keeps up to date, its spend) and their order is what keeps a run's
 * log and record right, so they are read together; the parts that stand alone live beside it
 * (`_tail_mapper.ts`, `_append_queue.ts`, `_tail_spend.ts`, `run_state.ts`).
 *
 * @module
 */
import { isTerminalRunStreamEvent } from "../../client/contract.ts";
import type { ProviderManagedAgentClient } from "../../client/mod.ts";
import type { RuntimeLogger } from "../log.ts";
import {
  ACTIVE_RUN_STATES,
  type NativeEventEntry,
  type NativeEventInput,
  type RunEventEntry,
  type RunEventInput,
  RunLeaseLostError,
  type Store,
} from "../store/types.ts";
import type { PendingToolRequest } from "../../wire/mod.ts";
import type { RunActivity } from "./activity.ts";
import { AppendQueue } from "./_append_queue.ts";
import { changeRun } from "./_change_run.ts";
import { pendingActivity, ToolRequestTracker } from "./pending.ts";
import { DEFAULT_PENDING_TIMEOUT_MS } from "./answers.ts";
import { isSessionGone } from "./provider_failure.ts";
import { afterEntries } from "./run_state.ts";
import { money, type UsageReport } from "./spend.ts";
import { EVERY_TURN, TailSpend, type TailSpendState } from "./_tail_spend.ts";

/** Default lease length: a lease not renewed for 15 s lapses. */
export const DEFAULT_RUN_LEASE_MS = 15_000;

/** Options of {@linkcode RunTails}. */
export interface RunTailsOptions {
  /** The store holding the logs, leases and run records. */
  store: Store;
  /** Log sink. */
  logger: RuntimeLogger;
  /** The provider client, loaded on first use. */
  client: () => Promise<ProviderManagedAgentClient>;
  /** Run activity of this replica (the gateway, tool answers and webhooks notify). */
  activity: RunActivity;
  /** The clock, ms since the epoch (the server's `now`). */
  now: () => number;
  /**
   * Lease length in ms (default 15000). Renewal and the scan for runs to take run every third
   * of it (5 s by default), so a lapsed lease is taken within `leaseMs + leaseMs / 3`.
   */
  leaseMs?: number;
  /**
   * Told of the entries each append added, in order (this replica's subscribers get them at once):
   * right after the append, except a batch's first `run.status` or terminal entry and those after
   * it, which come after the run record shows them (step 4).
   */
  onAppend?: (runId: string, entries: readonly RunEventEntry[]) => void;
  /** The pending timeout (for the `deniedAt` of `tool.pending` entries; default 10 min). */
  pendingTimeoutMs?: number;
  /**
   * Told of the native entries each append added, in order: with the run entries of the same
   * append that come after the record write, when there are such, else right after the append.
   */
  onAppendNative?: (runId: string, entries: readonly NativeEventEntry[]) => void;
  /** Told of list cost settled by this replica, by agent, in minor units (the metrics). */
  onListCost?: (agentId: string, amount: bigint) => void;
  /**
   * Told when this replica starts tailing a run (`true`, once it holds the lease) and when that
   * tail ended (`false`): meanwhile every append it makes to the run comes through `onAppend`.
   */
  onTailing?: (runId: string, tailing: boolean) => void;
}

/**
 * While a run streams events that do not change its state, the run record's `lastEventSeq` is
 * written at most once per this many ms, and this long after the log went quiet (step 4): it
 * trails the log by less than twice this.
 */
export const RECORD_DELAY_MS = 250;
/**
 * Run entries fed and not yet appended past which the tail waits before it reads on (so at most
 * about this many go in one append; `_append_queue.ts`).
 */
export const MAX_PENDING = 500;
/** Events per page of the history (the provider's largest page, as the vendor SDK reads it). */
const HISTORY_PAGE = 1000;
/** Active runs looked at per scan, per state. */
const SCAN_LIMIT = 1_000;
/** `tool.pending` entries carried by one run record write; more are appended after it. */
const PENDING_PER_WRITE = 16;
/** Log entries read per page when the record catches up with the log (step 2). */
const CATCH_UP_PAGE = 1_000;
/**
 * State-bearing entries whose turn a connection remembers for the record's catch-up (step 2): the
 * latest ones, which are those past a lagging record.
 */
const REMEMBERED_TURNS = 4_096;

interface Tail extends TailSpendState {
  controller: AbortController;
  /**
   * Until when (ms, this replica's clock) the lease surely holds: the time its last successful
   * take or renewal was asked, plus the lease length.
   */
  leaseUntil: number;
  /** Set when the routes told of news while the tail ran: it must not stop at a stale end. */
  poked: boolean;
  done: Promise<void>;
  /** The record writes, chained: a write never races another of this tail's. */
  recording: Promise<void>;
  /** The newest appended entry the record does not show yet (its `lastEventSeq`), and its turn. */
  unrecorded: { entry: RunEventEntry; turn: number | undefined } | null;
  /** Writes `unrecorded` once the log has been quiet for RECORD_DELAY_MS (`#recordWhenQuiet`). */
  recordTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the log will have been quiet for RECORD_DELAY_MS (`performance.now()`). */
  quietAt: number;
  /** When the record was last written (ms). */
  recordedAt: number;
  /** The latest usage the provider reported. */
  usage: UsageReport | null;
}

type Mapping = typeof import("./_tail_mapper.ts");

/** The tails this replica runs, and the scan that finds runs needing one. */
export class RunTails {
  readonly #store: Store;
  readonly #logger: RuntimeLogger;
  readonly #client: () => Promise<ProviderManagedAgentClient>;
  readonly #leaseMs: number;
  readonly #renewMs: number;
  readonly #onAppend: (runId: string, entries: readonly RunEventEntry[]) => void;
  readonly #onAppendNative: (runId: string, entries: readonly NativeEventEntry[]) => void;
  readonly #spend: TailSpend;
  readonly #onTailing: (runId: string, tailing: boolean) => void;
  readonly #now: () => number;
  readonly #pendingTimeoutMs: number;
  /** This replica's lease holder id. */
  readonly holder: string = crypto.randomUUID();
  readonly #tails = new Map<string, Tail>();
  /**
   * The lease releases of ended tails, under way: a run's next tail here waits for its release
   * before it takes the lease (this replica's own, so taking it before the release would succeed,
   * and the release would then free the lease its next tail runs under).
   */
  readonly #releasing = new Map<string, Promise<void>>();
  readonly #unsubscribe: () => void;
  #timer: ReturnType<typeof setInterval> | undefined;
  #scanning: Promise<void> | null = null;
  #closed = false;
  #mapping: Promise<Mapping> | null = null;

  /** Creates the tails; {@linkcode RunTails.start} begins the scan. */
  constructor(options: RunTailsOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#client = options.client;
    this.#leaseMs = options.leaseMs ?? DEFAULT_RUN_LEASE_MS;
    this.#renewMs = Math.max(Math.floor(this.#leaseMs / 3), 10);
    this.#onAppend = options.onAppend ?? (() => {});
    this.#onAppendNative = options.onAppendNative ?? (() => {});
    this.#onTailing = options.onTailing ?? (() => {});
    this.#now = options.now;
    this.#pendingTimeoutMs = options.pendingTimeoutMs ?? DEFAULT_PENDING_TIMEOUT_MS;
    this.#spend = new TailSpend({
      store: options.store,
      logger: options.logger,
      client: options.client,
      now: options.now,
      ...(options.onListCost !== undefined ? { onListCost: options.onListCost } : {}),
    });
    this.#unsubscribe = options.activity.subscribe((runId) => this.wake(runId));
  }

  /** How many runs this replica tails now. */
  get size(): number {
    return this.#tails.size;
  }

  /** Starts the periodic scan (the first one at once). */
  start(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setInterval(() => this.scan(), this.#renewMs);
    this.scan();
  }

  /** A run has news: wake its tail here, or try to take its lease. */
  wake(runId: string): void {
    if (this.#closed) return;
    const tail = this.#tails.get(runId);
    if (tail !== undefined) {
      tail.poked = true;
      return;
    }
    this.#tryTail(runId).catch(() => {});
  }

  /** Looks for active runs without a live lease and takes them. */
  scan(): Promise<void> {
    this.#scanning ??= this.#scan().catch((error) => {
      this.#logger.error("run tail scan failed", { errorName: error?.name });
    }).finally(() => this.#scanning = null);
    return this.#scanning;
  }

  async #scan(): Promise<void> {
    for (const state of ACTIVE_RUN_STATES) {
      let cursor: string | undefined;
      let seen = 0;
      do {
        if (this.#closed) return;
        const page = await this.#store.runs.list({
          state,
          limit: 100,
          ...(cursor !== undefined ? { cursor } : {}),
        });
        for (const run of page.runs) {
          if (!this.#tails.has(run.runId)) await this.#tryTail(run.runId).catch(() => {});
        }
        seen += page.runs.length;
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined && seen < SCAN_LIMIT);
    }
    if (this.#closed) return;
    await this.#spend.sweepHolds(
      (runId) => this.#tails.has(runId),
      (runId) => this.#tryTail(runId),
      () => this.#closed,
    );
  }

  async #tryTail(runId: string): Promise<void> {
    if (this.#closed || this.#tails.has(runId)) return;
    await this.#releasing.get(runId);
    if (this.#closed || this.#tails.has(runId)) return;
    const asked = this.#now();
    const acquired = await this.#store.events.acquireLease({
      runId,
      holder: this.holder,
      now: asked,
      ttlMs: this.#leaseMs,
    });
    if (!acquired || this.#closed) {
      if (acquired) await this.#store.events.releaseLease(runId, this.holder).catch(() => {});
      return;
    }
    if (this.#tails.has(runId)) return;
    this.#logger.info("run tail started", { runId });
    const controller = new AbortController();
    const tail: Tail = {
      controller,
      leaseUntil: asked + this.#leaseMs,
      poked: false,
      done: Promise.resolve(),
      recording: Promise.resolve(),
      unrecorded: null,
      recordTimer: undefined,
      quietAt: 0,
      recordedAt: 0,
      owner: null,
      usage: null,
      timeLimit: undefined,
    };
    this.#tails.set(runId, tail);
    this.#onTailing(runId, true);
    let failed = false;
    tail.done = this.#follow(runId, tail).catch((error) => {
      failed = true;
      if (!controller.signal.aborted) {
        this.#logger.error("run tail failed", { runId, errorName: error?.name });
      }
    }).finally(async () => {
      this.#tails.delete(runId);
      this.#onTailing(runId, false);
      const release = this.#store.events.releaseLease(runId, this.holder).catch(() => {});
      this.#releasing.set(runId, release);
      await release;
      if (this.#releasing.get(runId) === release) this.#releasing.delete(runId);
      // A failed tail is retried by the next scan, not at once (no tight loop on a bad store).
      if (this.#closed || controller.signal.aborted || failed) return;
      // News that came while the tail was ending (a follow-up message) gets a fresh tail.
      const record = await this.#store.runs.get(runId).catch(() => null);
      if (record !== null && ACTIVE_RUN_STATES.has(record.state) && !record.cancelRequested) {
        this.wake(runId);
      }
    });
  }

  /** Steps 1 to 7 of the module doc, while the lease holds. */
  async #follow(runId: string, tail: Tail): Promise<void> {
    const signal = tail.controller.signal;
    const renew = setInterval(() => {
      const asked = this.#now();
      this.#store.events.acquireLease({
        runId,
        holder: this.holder,
        now: asked,
        ttlMs: this.#leaseMs,
      }).then((held) => {
        if (!held) tail.controller.abort(new Error("lease lost"));
        else tail.leaseUntil = Math.max(tail.leaseUntil, asked + this.#leaseMs);
      }, () => {
        // A store hiccup: the tail goes on while its lease surely holds, and stops before
        // another replica may take it (`#leaseSure`).
        this.#leaseSure(runId, tail);
      });
    }, this.#renewMs);
    try {
      const mapping = await (this.#mapping ??= import("./_tail_mapper.ts"));
      const client = await this.#client();
      let backoff = 500;
      while (!signal.aborted) {
        tail.poked = false;
        try {
          if (!await this.#spend.keepTime(runId, tail)) return;
          if (await this.#connect(runId, client, mapping, tail)) return;
          backoff = 500;
        } catch (error) {
          if (signal.aborted) return;
          if (await this.#sessionGone(runId, tail, error)) return;
          this.#logger.info("run tail reconnecting", { runId, errorName: (error as Error)?.name });
          await sleep(backoff, signal);
          backoff = Math.min(backoff * 2, 5_000);
        }
      }
    } finally {
      clearInterval(renew);
      clearTimeout(tail.timeLimit);
      await this.#flushRecord(runId, tail);
    }
  }

  /** One connection: steps 1 to 6. Returns true when the run's turn ended. */
  async #connect(
    runId: string,
    client: ProviderManagedAgentClient,
    mapping: Mapping,
    tail: Tail,
  ): Promise<boolean> {
    // This connection's own signal: the tail's, or a failed append (which ends the connection).
    const failed = new AbortController();
    const signal = AbortSignal.any([tail.controller.signal, failed.signal]);
    const stream = await client.openEventStream(runId, signal, { deltas: true });
    const mapper = new mapping.TailMapper(runId, this.#now);
    // The tool requests waiting (step 5); closed ones are forgotten.
    const requests = new ToolRequestTracker({ keepClosed: false });
    // The turn of each entry not yet appended (the user messages fed before it).
    const turns = new Map<string, number>();
    // The turn of each state-bearing entry fed, appended or not: for the record's catch-up.
    const stateTurns = new Map<string, number>();
    // One append at a time, of everything fed meanwhile (`_append_queue.ts`).
    const appends = new AppendQueue(
      async (events, native) => {
        // Taken at once (the queue calls this when it takes the batch, before the reader feeds
        // on): what the run waits for as of the batch's last event.
        const waitingFor = events.some(isRequiresAction) ? requests.pending() : [];
        tail.usage = mapper.usage;
        const marks = mapper.takeMarks();
        await this.#append(runId, tail, events, turns, waitingFor, native);
        for (const event of events) turns.delete(event.sourceId);
        if (marks.length > 0) await this.#spend.settle(runId, tail, marks);
      },
      MAX_PENDING,
      (error) => {
        // A failed append ends this connection now, not at the stream's next event (which may be
        // long in coming: a run that waits for an answer): the tail reconnects and appends again
        // what the log lacks.
        failed.abort(error);
      },
    );
    // A stopped tail (closing, its lease refused or lapsing) starts no append: what waits goes.
    const stop = () => appends.stop();
    tail.controller.signal.addEventListener("abort", stop, { once: true });
    const feed = (event: Parameters<typeof mapper.feed>[0]) => {
      const pending = appends.events;
      const from = pending.length;
      const nativeFrom = appends.native.length;
      requests.feed(event);
      mapper.feed(event, pending, appends.native);
      appends.fed(from, nativeFrom);
      for (let i = from; i < pending.length; i++) {
        turns.set(pending[i].sourceId, mapper.turn);
        if (!bearsState(pending[i])) continue;
        stateTurns.set(pending[i].sourceId, mapper.turn);
        if (stateTurns.size > REMEMBERED_TURNS) stateTurns.delete(stateTurns.keys().next().value!);
      }
    };
    try {
      try {
        for await (const raw of client.iterateEvents(runId, { signal, limit: HISTORY_PAGE })) {
          const event = mapping.parseSessionEvent(raw);
          if (event !== null) feed(event);
          appends.schedule();
          if (!appends.roomy) await appends.room();
        }
        await appends.drain();
        // Lapsed holds of turns the history does not have: their follow-ups never reached it.
        // Aside: the stream is read meanwhile.
        this.#spend.dropUnsent(runId, mapper.turn);
        await this.#catchUp(runId, tail, stateTurns);
        if (mapper.position === "waiting") await this.#announce(runId, requests.pending());
        if (mapper.position === "ended" && !tail.poked) return true;
        for await (const batch of mapping.readSessionEventBatches(stream, { signal })) {
          for (const event of batch) feed(event);
          appends.schedule();
          if (mapper.position === "ended") {
            // The turn ends here once its events are in the log.
            await appends.drain();
            if (!tail.poked) return true;
          }
          if (!appends.roomy) await appends.room();
        }
        await appends.drain();
        return false;
      } catch (error) {
        // A broken stream: what was read is appended still (the deltas are in no history). A
        // stopped tail (closing, its lease lost) appends nothing more. A failed append, when one
        // ended the connection, is thrown rather than the read it cut short.
        if (tail.controller.signal.aborted) appends.stop();
        await appends.drain();
        throw error;
      }
    } finally {
      // Nothing of this connection is appended after it ended (the next one appends its own).
      tail.controller.signal.removeEventListener("abort", stop);
      appends.stop();
      await appends.settle();
      await stream.cancel().catch(() => {});
    }
  }

  /**
   * Brings the run record up to the log when it lags behind it (step 2): the entries past its
   * `lastEventSeq` are written into it by the rules of an append, `turns` telling the turn of the
   * state-bearing ones (as the history placed them). Nothing to do costs two reads.
   */
  async #catchUp(
    runId: string,
    tail: Tail,
    turns: ReadonlyMap<string, number>,
  ): Promise<void> {
    await tail.recording;
    const record = await this.#store.runs.get(runId);
    if (record === null) return;
    // Only what decides the record: the state-bearing entries, and the newest one.
    const missed: RunEventEntry[] = [];
    let newest: RunEventEntry | undefined;
    for (let after = record.lastEventSeq;;) {
      const page = await this.#store.events.list(runId, after, CATCH_UP_PAGE);
      for (const entry of page) if (bearsState(entry)) missed.push(entry);
      newest = page.at(-1) ?? newest;
      if (page.length < CATCH_UP_PAGE) break;
      after = page[page.length - 1].seq;
    }
    if (newest === undefined) return;
    if (missed.length > 0) {
      this.#logger.info("run record behind its log", {
        runId,
        fromSeq: record.lastEventSeq,
        toSeq: newest.seq,
      });
    }
    if (missed.at(-1) !== newest) missed.push(newest);
    await this.#writeRecord(runId, tail, missed, turns);
  }

  /**
   * Records the `tool.pending` entries of a waiting run's open requests on their own (step 5:
   * after a takeover, the entries the previous tail wrote are skipped by their keys).
   */
  async #announce(runId: string, requests: readonly PendingToolRequest[]): Promise<void> {
    if (requests.length === 0) return;
    const record = await this.#store.runs.get(runId);
    if (record === null) return;
    const at = new Date(this.#now()).toISOString();
    await this.#store.activity.append(
      pendingActivity(record, requests, { pendingTimeoutMs: this.#pendingTimeoutMs, at }),
    );
  }

  /**
   * Whether this tail's lease surely holds still: until a fifth of the lease length before it
   * may lapse (the margin covers the clocks of two replicas drifting apart). A tail whose lease
   * renewals failed (the store was unreachable) stops there, before another replica can take the
   * lease, rather than append beside that replica's tail: two tails appending at once could log
   * the same text twice, as deltas joined differently by each (`_append_queue.ts`).
   */
  #leaseSure(runId: string, tail: Tail): boolean {
    // A stopped tail (closing, its lease refused) appends nothing more either.
    if (tail.controller.signal.aborted) return false;
    if (this.#now() < tail.leaseUntil - this.#leaseMs / 5) return true;
    if (!tail.controller.signal.aborted) {
      this.#logger.info("run tail stopped: its lease may lapse", { runId });
      tail.controller.abort(new Error("lease lapsing"));
    }
    return false;
  }

  /** Appends and brings the run record up to date (step 4). */
  async #append(
    runId: string,
    tail: Tail,
    events: RunEventInput[],
    turns: ReadonlyMap<string, number> = new Map(),
    waitingFor: readonly PendingToolRequest[] = [],
    native: NativeEventInput[] = [],
  ): Promise<void> {
    if (events.length === 0 && native.length === 0) return;
    // Nothing is appended once the tail stopped or its lease may have gone to another replica
    // (checked last, just before the store write).
    if (!this.#leaseSure(runId, tail)) throw new Error("tail stopped");
    // Fenced by the store too: an append made after another replica took the lease (this
    // replica's clock running slow, say) is refused and writes nothing.
    const batch = await this.#store.events.appendBatch(runId, { events, native }, {
      holder: this.holder,
    }).catch((error) => {
      if (error instanceof RunLeaseLostError && !tail.controller.signal.aborted) {
        this.#logger.info("run tail stopped: its lease is another's", { runId });
        tail.controller.abort(new Error("lease lost"));
      }
      throw error;
    });
    const appended = batch.events;
    const publishNative = () => {
      if (batch.native.length > 0) this.#onAppendNative(runId, batch.native);
    };
    if (appended.length === 0) return publishNative();
    const changing = appended.findIndex(bearsState);
    if (changing === -1) {
      // Nothing the record will say differently but lastEventSeq: subscribers here get it
      // without waiting, and the record follows (step 4).
      this.#onAppend(runId, appended);
      publishNative();
      const entry = appended[appended.length - 1];
      tail.unrecorded = { entry, turn: turns.get(entry.sourceId) };
      // Right after an append, when the next one is least likely to arrive and queue behind the
      // write's disk sync (a timer's moment is any moment); and once more when the log has been
      // quiet for RECORD_DELAY_MS.
      if (this.#now() - tail.recordedAt >= RECORD_DELAY_MS) this.#flushRecord(runId, tail);
      else this.#recordWhenQuiet(runId, tail);
      return;
    }
    // What comes before the state change does not wait for the record: a message that arrives
    // with its turn's end in one read reaches subscribers a record write (one more commit) sooner.
    if (changing > 0) this.#onAppend(runId, appended.slice(0, changing));
    // A batch that says the run waits records what it waits for with the record (step 5).
    const waiting = appended.some(isRequiresAction);
    try {
      await this.#writeRecord(runId, tail, appended, turns, waiting ? waitingFor : []);
    } finally {
      // Subscribers here get a state change once the record shows it, so a client that answers
      // a terminal event with a follow-up message finds the run ended. (A store read may bring
      // them the entry sooner; where the log ends waits for the record: `event_page.ts`.)
      this.#onAppend(runId, appended.slice(changing));
      publishNative();
    }
  }

  /**
   * Writes the entry still unrecorded once the log has been quiet for RECORD_DELAY_MS (step 4),
   * unless a record write takes it first.
   *
   * Speed trick, and why: one timer per quiet spell, moved on when it fires early, not a timer
   * cleared and set again on every append: in a `--cpu-prof` of `bench/events_bench.ts`'s live
   * rounds, `clearTimeout` and `setTimeout` took about 75 µs per frame (Deno's timers keep a
   * list), a twentieth of the runtime's sampled JavaScript; about 15 µs with this timer.
   */
  #recordWhenQuiet(runId: string, tail: Tail): void {
    tail.quietAt = performance.now() + RECORD_DELAY_MS;
    if (tail.recordTimer !== undefined) return;
    const fire = () => {
      const left = tail.quietAt - performance.now();
      if (left > 0) {
        tail.recordTimer = setTimeout(fire, left);
        return;
      }
      tail.recordTimer = undefined;
      this.#flushRecord(runId, tail);
    };
    tail.recordTimer = setTimeout(fire, RECORD_DELAY_MS);
  }

  /** Writes the entry still unrecorded, if any; a failure is logged (the next write catches up). */
  #flushRecord(runId: string, tail: Tail): Promise<void> {
    return this.#writeRecord(runId, tail, []).catch((error) => {
      this.#logger.error("run record write failed", { runId, errorName: error?.name });
    });
  }

  /**
   * Writes `appended` and any entry still unrecorded into the run record, after this tail's
   * earlier record writes (each reads the record first, so two must not interleave).
   */
  #writeRecord(
    runId: string,
    tail: Tail,
    appended: readonly RunEventEntry[],
    turns: ReadonlyMap<string, number> = new Map(),
    waiting: readonly PendingToolRequest[] = [],
  ): Promise<void> {
    clearTimeout(tail.recordTimer);
    tail.recordTimer = undefined;
    const unrecorded = tail.unrecorded;
    tail.unrecorded = null;
    if (unrecorded === null && appended.length === 0) return tail.recording;
    tail.recordedAt = this.#now();
    let entries = appended;
    let turnsOf = turns;
    if (unrecorded !== null) {
      entries = [unrecorded.entry, ...appended];
      if (unrecorded.turn !== undefined) {
        turnsOf = new Map(turns).set(unrecorded.entry.sourceId, unrecorded.turn);
      }
    }
    const write = tail.recording.then(() =>
      this.#record(runId, entries, turnsOf, waiting, tail.usage)
    );
    tail.recording = write.catch(() => {});
    return write;
  }

  /**
   * Writes what appended entries say into the run record (step 4), with the `tool.pending`
   * entries of `waiting` (step 5) and the run's latest list cost.
   */
  async #record(
    runId: string,
    appended: readonly RunEventEntry[],
    turns: ReadonlyMap<string, number>,
    waiting: readonly PendingToolRequest[] = [],
    usage: UsageReport | null = null,
  ): Promise<void> {
    const cost = usage?.cost ?? null;
    const turnOf = (entry: RunEventEntry) => turns.get(entry.sourceId);
    let newest = 0;
    for (const entry of appended) newest = Math.max(newest, turnOf(entry) ?? 0);
    // Entries of a turn the record does not count yet: the follow-up that started it is still
    // being recorded by the route (the provider echoed it first). Wait for that write (up to 1 s)
    // rather than write the record read before it back over it.
    for (let waits = 0;;) {
      const record = await this.#store.runs.get(runId);
      if (record === null) return;
      if (record.turns !== undefined && record.turns < newest && waits < 20) {
        waits++;
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      // Written only over the record it was derived from (see `_change_run.ts`).
      const at = new Date(this.#now()).toISOString();
      const activity = pendingActivity(record, waiting, {
        pendingTimeoutMs: this.#pendingTimeoutMs,
        at,
      });
      await changeRun(
        this.#store,
        runId,
        (current) => {
          const next = afterEntries(current, appended, { at, turnOfEntry: turnOf });
          return cost === null ? next : { ...next, listCost: money(cost) };
        },
        record,
        activity.slice(0, PENDING_PER_WRITE),
      );
      // Past what one write carries (a store write has a size limit): on their own, after it.
      if (activity.length > PENDING_PER_WRITE) {
        await this.#store.activity.append(activity.slice(PENDING_PER_WRITE));
      }
      return;
    }
  }

  /** Whether the provider says the session is gone: the run then ends as failed. */
  async #sessionGone(runId: string, tail: Tail, error: unknown): Promise<boolean> {
    if (!isSessionGone(error)) return false;
    const gone: RunEventInput = {
      sourceId: "session.gone",
      at: new Date(this.#now()).toISOString(),
      event: {
        type: "run.failed",
        runId,
        error: { type: "session_deleted", message: "The session no longer exists" },
      },
    };
    await this.#append(runId, tail, [gone]);
    // Nothing more will be reported: every hold of the run settles with what was.
    await this.#spend.settle(runId, tail, [
      { turn: EVERY_TURN, final: true, usage: tail.usage, budgetReached: false },
    ]);
    return true;
  }

  /** Stops every tail and the scan, releasing this replica's leases. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe();
    if (this.#timer !== undefined) clearInterval(this.#timer);
    const tails = [...this.#tails.values()];
    for (const tail of tails) tail.controller.abort(new Error("closing"));
    await Promise.all(tails.map((tail) => tail.done));
    await this.#scanning;
  }
}

/** Whether an entry (or an entry to append) says the run waits for an answer. */
function isRequiresAction(entry: RunEventInput): boolean {
  return entry.event.type === "run.status" && entry.event.state === "requires_action";
}

/** Whether an entry changes the run's state (`run.status` or a terminal event). */
function bearsState(entry: RunEventInput): boolean {
  return entry.event.type === "run.status" || isTerminalRunStreamEvent(entry.event);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
