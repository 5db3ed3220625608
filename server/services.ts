/**
 * What routes and rules share inside one runtime server.
 *
 * @module
 */
import type { Authenticator } from "./authenticator.ts";
import type { BootstrapCredential } from "./bootstrap/credential.ts";
import type { RuntimeLogger } from "./log.ts";
import type { RuntimeMetrics } from "./metrics.ts";
import type { Idempotency } from "./rules/idempotency.ts";
import type { InFlightQuota } from "./rules/quota.ts";
import type { Store } from "./store/types.ts";

/** The shared parts of a runtime server, handed to route factories. */
export interface RuntimeServices {
  /** The enrolled bootstrap credential (digests only). */
  readonly bootstrap: BootstrapCredential;
  /** The authority store. */
  readonly store: Store;
  /** Resolves bearers to principals. */
  readonly authenticator: Authenticator;
  /** Per-principal in-flight counter. */
  readonly quota: InFlightQuota;
  /** The idempotency rules of the server's routes and MCP tools, and what they share. */
  readonly idempotency: Idempotency;
  /** Log sink. */
  readonly logger: RuntimeLogger;
  /** Clock, ms since the epoch. */
  readonly now: () => number;
  /** Body limit in bytes. */
  readonly maxBodyBytes: number;
  /**
   * The metrics the server keeps, when any: event streams and run tails update their gauges
   * (`metrics?.eventStreams.inc()` / `.dec()`, `metrics?.tailsHeld.inc()` / `.dec()`).
   */
  readonly metrics?: RuntimeMetrics;
}
