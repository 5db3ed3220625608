/**
 * Deferred session events: a frame whose type the session reader proved from its text (see
 * `_peek.ts`) and whose caller asked to read it late is yielded as a kind `other` event that
 * parses its text only when `raw`, `id` or `processedAt` is first read. Only types the parser
 * always reads as kind `other` can be deferred ({@linkcode DEFERRABLE_TYPES}), so a deferred event
 * says what a parsed one would.
 *
 * The run loop defers `session.usage`: it needs the counters of the latest one only at the turn's
 * end, so most of them are never parsed.
 *
 * @module
 */
import { judgedType } from "./_peek.ts";
import {
  type ManagedAgentOtherEvent,
  type ManagedAgentSessionEvent,
  parseSessionEventData,
  type RawSessionEvent,
} from "./events.ts";

/**
 * The wire types `parseSessionEvent` reads as kind `other` whatever their fields (the
 * events test holds the parser to this).
 */
export const DEFERRABLE_TYPES: ReadonlySet<string> = new Set([
  "session.usage",
  "usage",
  "user.message",
  "user.interrupt",
  "user.tool_confirmation",
  "user.custom_tool_result",
  "agent.thinking",
  "span.model_request_start",
  "span.model_request_end",
]);

/**
 * A kind `other` event whose frame is parsed on first read of `raw`, `id` or `processedAt`. A
 * text that is not JSON after all (its start proved only the type) reads as `{ type }`.
 */
class DeferredSessionEvent implements ManagedAgentOtherEvent {
  readonly kind = "other" as const;
  readonly type: string;
  #data: string;
  #parsed: ManagedAgentSessionEvent | undefined;

  constructor(type: string, data: string) {
    this.type = type;
    this.#data = data;
  }

  #event(): ManagedAgentSessionEvent {
    if (this.#parsed === undefined) {
      this.#parsed = parseSessionEventData({ data: this.#data }) ??
        { type: this.type, raw: { type: this.type }, kind: "other" };
      this.#data = "";
    }
    return this.#parsed;
  }

  get raw(): RawSessionEvent {
    return this.#event().raw;
  }

  get id(): string | undefined {
    return this.#event().id;
  }

  get processedAt(): string | undefined {
    return this.#event().processedAt;
  }
}

/**
 * The deferred event of a frame whose data starts with a type the reader proved, or undefined
 * when that type cannot be deferred (the reader then parses the frame now).
 */
export function deferredSessionEvent(data: string): ManagedAgentSessionEvent | undefined {
  const type = judgedType(data);
  return DEFERRABLE_TYPES.has(type) ? new DeferredSessionEvent(type, data) : undefined;
}
