/**
 * Maps a run's provider session events to the entries of its event log, with the provider event
 * id each one came from (its `sourceId`, unique within the run):
 *
 * 1. the first entry of every log is `run.started` with source id `run.started`;
 * 2. `session.status_running` becomes `run.status {state: "running"}` (a turn began), source id
 *    the provider event's id;
 * 3. everything else maps through the client's run mapping (`RunEventMapper`: the same rules as
 *    `streamSession` with deltas, including `run.cancelled` after an interrupt); the first run
 *    event of a provider event carries its id, any further one `<id>#<n>`;
 * 4. a `message.delta` carries `<message event id>#d<offset>`, the offset of its first character
 *    in the message's text, so the same slice of text keeps the same id on every replica. The
 *    offset counts from the preview's `event_start`: deltas of a preview whose start this
 *    connection did not see (it opened, or reopened after a break, in the middle of a message)
 *    have no known offset and are not logged, nor is the rest the final message adds to them: an
 *    id counted from the wrong place would skip text the log lacks and log text at an id it
 *    holds for other text;
 * 5. a provider event without an id (only a stream's own `error` frame) is not logged: it says
 *    the connection failed, not the run, and the tail reconnects;
 * 6. every provider event with an id is also kept as it came, its JSON text, for the native log
 *    (previews, which have no id, are not).
 *
 * It also remembers the latest usage the provider reported (`session.usage`: tokens and list
 * cost, cumulative) and marks each point where a turn waits for a tool answer or ends, with the
 * usage reported by then ({@linkcode TurnMark}): what the tail settles (`spend.ts`).
 *
 * Each provider event is fed once: ids already fed are skipped (the history and the stream
 * overlap after a reconnect). The store skips source ids the log already holds, so feeding the
 * whole history again after a takeover appends only what the previous tail missed.
 *
 * @module
 */
import type { RunStreamEvent } from "../../client/contract.ts";
import { RunEventMapper } from "../../client/managed_agents/run_event_mapper.ts";
import {
  type ManagedAgentSessionEvent,
  parseSessionEvent,
} from "../../client/managed_agents/events.ts";
import { readSessionEventBatches } from "../../client/managed_agents/session_reader.ts";
import type { NativeEventInput, RunEventInput } from "../store/run_event_types.ts";
import { type UsageReport, usageReportOf } from "./spend.ts";
import { startsATurn } from "./start_request.ts";

export { parseSessionEvent, readSessionEventBatches };
export type { ManagedAgentSessionEvent };

/** Where the run's latest turn stands, after the events fed so far. */
export type TurnPosition = "open" | "waiting" | "ended";

/** A turn that waits for a tool answer or ended, with the usage reported by then. */
export interface TurnMark {
  /** The turn (the events that start one, fed by then). */
  readonly turn: number;
  /** Whether it ended (not merely waits). */
  readonly final: boolean;
  /** The latest usage reported before it, if any. */
  readonly usage: UsageReport | null;
  /** Whether it ended because the session reached its budget (`budget_reached`). */
  readonly budgetReached: boolean;
}

/** The per-connection mapping state of one run's tail. */
export class TailMapper {
  readonly #runId: string;
  readonly #now: () => number;
  readonly #mapper: RunEventMapper;
  readonly #seen = new Set<string>();
  readonly #streamed = new Map<string, number>();
  /** Previews whose `event_start` this mapping saw: their deltas' offsets are known. */
  readonly #started = new Set<string>();
  /** Previews streamed without a start seen: nothing of them goes to the log as deltas. */
  readonly #unplaced = new Set<string>();
  #opened = false;
  #position: TurnPosition = "open";
  #turn = 0;
  #usage: UsageReport | null = null;
  #marks: TurnMark[] = [];

  /** Starts the mapping of one run's events; `now` stamps the entries (`at`). */
  constructor(runId: string, now: () => number) {
    this.#runId = runId;
    this.#now = now;
    this.#mapper = new RunEventMapper(runId, true);
  }

  /**
   * How many events that start a turn (`user.message`, `user.define_outcome`) were fed: the turn
   * the next entries belong to (as the gateway counts a run's turns).
   */
  get turn(): number {
    return this.#turn;
  }

  /** Where the latest turn stands: `ended` once its last significant event was terminal. */
  get position(): TurnPosition {
    return this.#position;
  }

  /** The latest usage the provider reported, if any. */
  get usage(): UsageReport | null {
    return this.#usage;
  }

  /** The turns that waited or ended since the last call, oldest first. */
  takeMarks(): TurnMark[] {
    const marks = this.#marks;
    this.#marks = [];
    return marks;
  }

  /**
   * Appends to `out` the log entries one provider event yields, and to `native` the event itself
   * (rules of the module doc).
   */
  feed(event: ManagedAgentSessionEvent, out: RunEventInput[], native?: NativeEventInput[]): void {
    const at = new Date(this.#now()).toISOString();
    if (!this.#opened) {
      this.#opened = true;
      out.push({ sourceId: "run.started", at, event: { type: "run.started", runId: this.#runId } });
    }
    const id = event.id;
    if (id !== undefined) {
      if (this.#seen.has(id)) return;
      this.#seen.add(id);
      native?.push({ id, type: event.type, json: JSON.stringify(event.raw) });
    }
    if (startsATurn(event.type)) {
      this.#position = "open";
      this.#turn++;
    } else if (event.type === "session.usage") {
      this.#usage = usageReportOf(event.raw.usage) ?? this.#usage;
    }
    if (event.kind === "status" && event.status === "running") {
      this.#position = "open";
      if (id !== undefined) {
        out.push({
          sourceId: id,
          at,
          event: { type: "run.status", runId: this.#runId, state: "running" },
        });
      }
      return;
    }
    if (event.kind === "preview_start") {
      this.#started.add(event.eventId);
      this.#unplaced.delete(event.eventId);
      this.#streamed.delete(event.eventId);
    } else if (event.type === "span.model_request_end") {
      this.#streamed.clear();
      this.#started.clear();
      this.#unplaced.clear();
    }
    const produced: RunStreamEvent[] = [];
    this.#mapper.map(event, produced);
    let n = 0;
    for (const mapped of produced) {
      let sourceId: string | undefined;
      if (mapped.type === "message.delta") {
        const target = event.kind === "delta" ? event.eventId : id;
        if (target === undefined) continue;
        if (event.kind === "delta" && !this.#started.has(target)) this.#unplaced.add(target);
        if (this.#unplaced.has(target)) continue;
        const offset = this.#streamed.get(target) ?? 0;
        this.#streamed.set(target, offset + mapped.text.length);
        sourceId = `${target}#d${offset}`;
      } else {
        if (id === undefined) continue;
        sourceId = n === 0 ? id : `${id}#${n}`;
        n++;
        if (
          mapped.type === "run.completed" || mapped.type === "run.failed" ||
          mapped.type === "run.cancelled"
        ) {
          this.#position = "ended";
          this.#mark(
            true,
            mapped.type === "run.completed" && mapped.stopReason === "budget_reached",
          );
        } else if (mapped.type === "run.status" && mapped.state === "requires_action") {
          this.#position = "waiting";
          this.#mark(false, false);
        }
      }
      out.push({ sourceId, at, event: mapped });
    }
    if (event.kind === "message" && id !== undefined) {
      this.#streamed.delete(id);
      this.#started.delete(id);
      this.#unplaced.delete(id);
    }
  }

  #mark(final: boolean, budgetReached: boolean): void {
    this.#marks.push({ turn: this.#turn, final, usage: this.#usage, budgetReached });
  }
}
