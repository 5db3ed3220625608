/**
 * {@linkcode RunEventMapper}: the one mapping of a managed-agents session's parsed events onto the
 * canonical run events (`RunStreamEvent`), with the state that mapping needs across events (the
 * latest usage, the last session error, an interrupted turn, the text message previews already
 * streamed). The client's run loop (`_run.ts`: `streamRun`, `streamSession`) and the service's
 * run tails (`server/runs/_tail_mapper.ts`) both map through it. Internal to the package: shared
 * across its folders, not exported from any entry point.
 *
 * @module
 */
import type { RunStreamEvent, RuntimeUsage } from "../contract.ts";
import { isObject } from "../guards.ts";
import type { ManagedAgentSessionEvent } from "./events.ts";
import { mapManagedAgentSessionEvent, numericUsage } from "./stream.ts";

/** Unread usage events a mapper keeps before it reads the newest (bounding what they hold). */
const USAGE_BACKLOG = 16;

/**
 * Maps parsed session events to canonical events. It remembers the latest `session.usage`
 * (attached to `run.completed`), the latest `session.error` (which explains a `run.failed`
 * caused by termination), whether the current turn was interrupted (its end is then
 * `run.cancelled`), and the text each message preview streamed (so the final message adds only
 * what the deltas missed). Synchronous, so the hot path stays in one optimizable function.
 * The gateway's run tails map through it too (`server/runs/tail.ts`).
 */
export class RunEventMapper {
  readonly #runId: string;
  #usage: RuntimeUsage | undefined;
  // Usage events not read yet, newest last: the run loop defers their parse (see loopSkip).
  readonly #usageEvents: ManagedAgentSessionEvent[] = [];
  #lastError: { type?: string; message: string } | undefined;
  #interrupted = false;
  // Text streamed so far per previewed message id; cleared when the final event or the model
  // request's end closes the preview.
  readonly #previews = new Map<string, string>();
  readonly #deltas: boolean;

  constructor(runId: string, deltas: boolean) {
    this.#runId = runId;
    this.#deltas = deltas;
  }

  /** Whether the current turn saw a `user.interrupt`. */
  get interrupted(): boolean {
    return this.#interrupted;
  }

  /** The events one parsed session event yields, in order (usually none or one). */
  map(event: ManagedAgentSessionEvent, out: RunStreamEvent[]): void {
    const type = event.type;
    if (event.kind === "other") {
      if (type === "session.usage" || type === "usage") {
        if (this.#usageEvents.push(event) >= USAGE_BACKLOG) this.#readUsage();
      } else if (type === "user.interrupt") this.#interrupted = true;
      else if (type === "user.message") this.#interrupted = false;
      else if (type === "span.model_request_end") this.#previews.clear();
      return;
    }
    if (event.kind === "error" && type === "session.error") {
      const error = event.raw.error;
      if (isObject(error) && typeof error.message === "string") {
        this.#lastError = typeof error.type === "string"
          ? { type: error.type, message: error.message }
          : { message: error.message };
      }
      return;
    }
    if (event.kind === "delta") {
      if (!this.#deltas) return;
      const id = event.eventId;
      if (id !== undefined) this.#previews.set(id, (this.#previews.get(id) ?? "") + event.text);
    } else if (event.kind === "message" && this.#deltas) {
      // Deltas come before every message.completed: what the previews streamed, then the rest
      // of the final text (all of it when no preview streamed).
      const streamed = event.id === undefined ? undefined : this.#previews.get(event.id);
      if (event.id !== undefined) this.#previews.delete(event.id);
      const rest = streamed !== undefined && event.text.startsWith(streamed)
        ? event.text.slice(streamed.length)
        : streamed === undefined
        ? event.text
        : "";
      if (rest !== "") out.push({ type: "message.delta", runId: this.#runId, text: rest });
    }
    const mapped = mapManagedAgentSessionEvent(event, this.#runId);
    if (mapped === null) return;
    if (mapped.type === "run.completed" || mapped.type === "run.failed") {
      this.#previews.clear();
      if (this.#interrupted && mapped.type === "run.completed") {
        out.push(this.cancelled());
        return;
      }
      if (this.#interrupted && event.kind === "status" && event.status === "terminated") {
        out.push(this.cancelled());
        return;
      }
    }
    if (mapped.type === "run.completed") {
      const usage = this.#readUsage();
      out.push(usage === undefined ? mapped : { ...mapped, usage });
    } else if (
      mapped.type === "run.failed" && this.#lastError !== undefined &&
      mapped.error.type === "session_terminated"
    ) out.push({ ...mapped, error: this.#lastError });
    else out.push(mapped);
  }

  /**
   * The counters of the latest usage event that has any, reading the unread ones newest first
   * (an older one matters only when every newer one has none).
   */
  #readUsage(): RuntimeUsage | undefined {
    const events = this.#usageEvents;
    for (let i = events.length - 1; i >= 0; i--) {
      const usage = numericUsage(events[i].raw.usage);
      if (usage !== undefined) {
        this.#usage = usage;
        break;
      }
    }
    events.length = 0;
    return this.#usage;
  }

  /** The `run.cancelled` that ends an interrupted turn. */
  cancelled(): RunStreamEvent {
    return { type: "run.cancelled", runId: this.#runId };
  }
}
