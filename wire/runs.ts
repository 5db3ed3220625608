/**
 * Runs on the wire: the public run record the run routes answer with, a page of them and its
 * query, and the bodies that start a run and send it a follow-up message. A run's state is one
 * of the run contract's `RUN_STATES` (`client/contract.ts`).
 *
 * | route | body | answer |
 * |---|---|---|
 * | `POST /v1/runs` | {@linkcode StartRunBody} | 201 {@linkcode RunRecord} |
 * | `GET /v1/runs` | query {@linkcode ListRunsParams} | 200 {@linkcode RunPage} |
 * | `GET /v1/runs/{runId}` | – | 200 {@linkcode RunRecord} |
 * | `POST /v1/runs/{runId}/cancel` | – | 202 {@linkcode RunRecord} |
 * | `POST /v1/runs/{runId}/messages` | {@linkcode SendRunMessageBody} | 202 {@linkcode RunRecord} |
 *
 * @module
 */
import type { RuntimeRunInput, RuntimeRunState, RuntimeUsage } from "../client/contract.ts";
import type { MonetaryAmount } from "./spend.ts";

/** A run as the service answers it. `runId` is the provider's session id. */
export interface RunRecord {
  /** The run's id (the provider's session id). */
  runId: string;
  /** The principal that started it. */
  principalId: string;
  /** The agent it runs. */
  agentId: string;
  /** The agent version, when one was pinned. */
  agentVersion?: number;
  /** The environment it runs in. */
  environmentId: string;
  /** The title given at start. */
  title?: string;
  /** Where the run is: one of the run contract's `RUN_STATES`. */
  state: RuntimeRunState;
  /** Why the run last stopped, when it did. */
  stopReason?: string;
  /** Token usage, where the provider reports it. */
  usage?: RuntimeUsage;
  /** The list cost the provider reported for the run so far, where it prices its model. */
  listCost?: MonetaryAmount;
  /**
   * The ceiling the provider enforces on the run's list cost (its session's budget), when the
   * principal has a budget or a `maxRunCost`.
   */
  maxListCost?: MonetaryAmount;
  /** The sequence number of the run's newest event (0 before the first). */
  lastEventSeq: number;
  /** RFC 3339 creation time. */
  createdAt: string;
  /** RFC 3339 time of the last change. */
  updatedAt: string;
  /** RFC 3339 time the run ended, once it did. */
  endedAt?: string;
}

/** The query of `GET /v1/runs`. */
export interface ListRunsParams {
  /** Page size, 1 to 100 (service default 20). */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  /** Only runs in this state. */
  state?: RuntimeRunState;
  /** Only this principal's runs (admins and approvers; a plain reader sees only its own). */
  principalId?: string;
}

/** One page of `GET /v1/runs`: newest first. */
export interface RunPage {
  /** The runs of this page. */
  runs: RunRecord[];
  /** The cursor of the next page, or null on the last page. */
  nextCursor: string | null;
}

/** Provider options of a run start; each is optional when the service has a default. */
export interface StartRunMetadata {
  /** The agent to run (default: the service's default agent). */
  agent_id?: string;
  /** The environment to run in (default: the service's default environment). */
  environment_id?: string;
  /** A pinned agent version (a whole number of at least 1). */
  agent_version?: number;
  /** Resources to mount, in the provider's shape. */
  resources?: Record<string, unknown>[];
  /** Vault ids the run may use. */
  vault_ids?: string[];
}

/** The body of `POST /v1/runs`. */
export interface StartRunBody {
  /** The first message: a prompt, or a conversation of user turns. */
  input: string | RuntimeRunInput[];
  /** A title to recognise the run by. */
  title?: string;
  /** Which agent and environment, and further provider options. */
  metadata?: StartRunMetadata;
}

/** The body of `POST /v1/runs/{runId}/messages`. */
export interface SendRunMessageBody {
  /** The follow-up message: a prompt, or a conversation of user turns. */
  input: string | RuntimeRunInput[];
}
