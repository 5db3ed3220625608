/**
 * The SDK's error family.
 *
 * @module
 */

/** Fields of a {@linkcode RuntimeServiceError}. */
export interface RuntimeServiceErrorInit {
  /** HTTP status; 0 when no response arrived. */
  status: number;
  /** Stable code: the service's (such as `authenticationFailed`) or the SDK's own. */
  code: string;
  /** The service's layer, or `client` / `transport` for failures before an answer. */
  layer: string;
  /** Human-readable message (never holds a bearer). */
  message: string;
  /** Correlation id of the call. */
  correlationId: string;
  /** Further fields of the error body, such as `requiredCapability` or `details`. */
  details?: Readonly<Record<string, unknown>>;
  /** The underlying failure, for connection errors. */
  cause?: unknown;
}

/**
 * A call to the runtime service failed. Carries the HTTP `status` (0 when no response arrived),
 * the stable `code`, the `layer` and the call's `correlationId`.
 *
 * SDK codes besides the service's: `connectionFailed` (layer `transport`), `invalidResponse`
 * (layer `transport`), `deadlineExceeded` (layer `client`, status 0, when the call's own deadline
 * passed before an answer).
 *
 * @example
 * ```ts ignore
 * import { RuntimeServiceClient, RuntimeServiceError } from "@automation/runtime/sdk";
 * const client = new RuntimeServiceClient({ baseUrl: "http://127.0.0.1:7777", token: "art_…" });
 * try {
 *   await client.revokePrincipal("0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1");
 * } catch (error) {
 *   if (error instanceof RuntimeServiceError && error.code === "notFound") console.log("gone");
 *   else throw error;
 * }
 * ```
 */
export class RuntimeServiceError extends Error {
  /** HTTP status; 0 when no response arrived. */
  readonly status: number;
  /** Stable error code. */
  readonly code: string;
  /** Layer that refused the call. */
  readonly layer: string;
  /** Correlation id of the call, as the service reported it. */
  readonly correlationId: string;
  /** Further fields of the error body. */
  readonly details: Readonly<Record<string, unknown>>;

  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import { RuntimeServiceError } from "./errors.ts";
   * const error = new RuntimeServiceError({
   *   status: 403,
   *   code: "missingCapability",
   *   layer: "auth",
   *   message: "Capability authority:admin required",
   *   correlationId: crypto.randomUUID(),
   * });
   * console.log(error.status); // 403
   * ```
   */
  constructor(init: RuntimeServiceErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "RuntimeServiceError";
    this.status = init.status;
    this.code = init.code;
    this.layer = init.layer;
    this.correlationId = init.correlationId;
    this.details = Object.freeze({ ...init.details });
  }
}
