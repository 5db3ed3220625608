/**
 * The SDK's own call shapes: the options every call takes and the parameters of
 * `createPrincipal`. The request and answer shapes of the API are the wire contract's
 * (`wire/mod.ts`), exported from `sdk/mod.ts` as they are.
 *
 * @module
 */
import {
  type Capability,
  INTERFACE_VERSION,
  type MonetaryAmount,
  type PrincipalBudget,
} from "../wire/mod.ts";

/** The value of `x-interface-version` this SDK speaks: the wire contract's `INTERFACE_VERSION`. */
export const RUNTIME_INTERFACE_VERSION: typeof INTERFACE_VERSION = INTERFACE_VERSION;

/** The SDK's name for a principal's capability: the wire contract's `Capability`. */
export type RuntimeCapability = Capability;

/** Parameters of {@linkcode RuntimeServiceClient.createPrincipal}. */
export interface CreatePrincipalParams {
  /** Capabilities to grant: non-empty, a subset of the caller's, never `authority:admin`. */
  capabilities: readonly RuntimeCapability[];
  /** Expiry: at most 90 days ahead and not after the caller's own expiry. */
  expiresAt: string | Date;
  /**
   * Lower-case UUID of the new principal (default: a random UUID, generated once per call so
   * retries send the identical body). Pass one when you reuse an `idempotencyKey` across calls.
   */
  principalId?: string;
  /**
   * The 1 to 32 agent ids the principal may start runs on (a subset of the issuer's own list
   * when it has one). Absent: any agent the issuer may use.
   */
  agentIds?: readonly string[];
  /** The 1 to 32 environment ids its runs may run in (within the issuer's). Absent: the issuer's. */
  environmentIds?: readonly string[];
  /** Up to 32 vault ids its runs may attach (within the issuer's). Absent: none. */
  vaultIds?: readonly string[];
  /** Up to 32 memory store ids its runs may mount (within the issuer's). Absent: none. */
  memoryStoreIds?: readonly string[];
  /** Up to 32 GitHub repositories (`owner/name`) its runs may mount. Absent: none. */
  repositories?: readonly string[];
  /** Up to 32 file ids its runs may mount (within the issuer's). Absent: none. */
  fileIds?: readonly string[];
  /** Active runs the principal may have at once, 1 to 100 (service default 8). */
  maxActiveRuns?: number;
  /**
   * Whether its runs may override the agent's model, system prompt, tools, MCP servers or
   * skills (through the provider's API; default false, only when the issuer may itself).
   */
  allowAgentOverrides?: boolean;
  /**
   * The most its runs may spend together (list cost) each `day` or `month` (UTC) or in `total`:
   * `{amount: "5000", currency: "USD", period: "day"}` is $50 a day. Absent: the issuer's.
   */
  budget?: Readonly<PrincipalBudget>;
  /** The most one of its runs may spend, such as `{amount: "500", currency: "USD"}`. */
  maxRunCost?: Readonly<MonetaryAmount>;
  /** The longest one of its runs may stay active at a stretch, in seconds (1 to 604800). */
  maxRunSeconds?: number;
  /**
   * A name for people, such as the CI job it is for: 1 to 64 printable characters. Shown by
   * `GET /v1/principals`, `GET /v1/runtime` and the audit entries about it.
   */
  name?: string;
  /** Up to 16 string pairs; keys 1 to 64 printable ASCII characters, values at most 512. */
  metadata?: Readonly<Record<string, string>>;
}

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the call (and its retries); the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Deadline of this call in ms, sent as `x-deadline` (default: the client's `deadlineMs`). */
  deadlineMs?: number;
}

/** Options of mutating calls. */
export interface MutatingCallOptions extends CallOptions {
  /**
   * The `idempotency-key` (1 to 128 printable ASCII characters). Default: a random UUID per
   * call, identical across its retries.
   */
  idempotencyKey?: string;
}

/** The methods {@linkcode RuntimeServiceClient.request} sends: those of the service's API. */
export const REQUEST_METHODS: readonly ["GET", "POST", "DELETE"] = Object.freeze(
  ["GET", "POST", "DELETE"] as const,
);

/** One call of {@linkcode RuntimeServiceClient.request}. */
export interface RuntimeRequest {
  /** HTTP method. */
  method: (typeof REQUEST_METHODS)[number];
  /** Path under the base URL, query included, such as `/v1/runs?limit=5`. */
  path: string;
  /** JSON body (sent with `content-type: application/json`); absent: no body. */
  body?: unknown;
}

/** What {@linkcode RuntimeServiceClient.request} answers: the service's answer as it came. */
export interface RuntimeAnswer {
  /** HTTP status. */
  status: number;
  /** Response headers. */
  headers: Headers;
  /** The parsed JSON body; null when the answer had none. */
  body: unknown;
}
