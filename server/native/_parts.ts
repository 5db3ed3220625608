/**
 * What the `/provider` interface's handlers share: the gateway's services, the event hub, the
 * store, the clock and the rules' parts; and how a handler reads its request's provider path.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import type { ToolAnswers } from "../runs/answers.ts";
import type { RunEventHub } from "../runs/events.ts";
import type { Store } from "../store/types.ts";
import type { NativeRuleParts } from "./_chain.ts";
import { NATIVE_PREFIX } from "./operations.ts";
import type { RelayParts } from "./_relay.ts";

/** The parts of the interface. */
export interface NativeParts extends RelayParts {
  /** Tool answers: the one claim path. */
  readonly answers: ToolAnswers;
  /** This replica's event hub: native streams, relayed streams. */
  readonly hub: RunEventHub;
  /** The store: run records, native logs. */
  readonly store: Store;
  /** The rules' parts. */
  readonly rules: NativeRuleParts;
}

/** The provider's path of a request (`/provider` taken off, as it came: ids still encoded). */
export function providerPathOf(context: RequestContext): string {
  return context.path.slice(NATIVE_PREFIX.length);
}

/** The request's query string without its `?`, or undefined. */
export function queryOf(context: RequestContext): string | undefined {
  return context.query.length > 1 ? context.query.slice(1) : undefined;
}
