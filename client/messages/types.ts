/**
 * Wire shapes of the provider's stateless messages API and its message batches, as far as the
 * {@linkcode ProviderApiClient} reads or writes them. Field names are the wire's snake_case; the
 * provider may send more fields than listed.
 *
 * @module
 */
import type { RuntimeRunStatus } from "../contract.ts";

/** One content block of a message: text, tool use, thinking or a server-tool block. */
export interface ProviderContentBlock {
  /** `text`, `tool_use`, `thinking`, `redacted_thinking`, `server_tool_use`, … */
  type: string;
  /** Text of a `text` block. */
  text?: string;
  /** Id of a `tool_use` block (`toolu_…`). */
  id?: string;
  /** Tool name of a `tool_use` block. */
  name?: string;
  /** Parsed input of a `tool_use` block. */
  input?: unknown;
  /** Further fields. */
  [field: string]: unknown;
}

/** One message of a request's conversation. */
export interface ProviderMessageParam {
  /** Who speaks. */
  role: "user" | "assistant";
  /** Text or content blocks. */
  content: string | Record<string, unknown>[];
}

/**
 * The body of `POST /v1/messages` (and of each batch request's `params`). `model`, `max_tokens`
 * and `messages` are required; further optional fields (`tools`, `tool_choice`, `thinking`,
 * `stop_sequences`, …) pass through as given.
 */
export interface ProviderMessagesCreateParams {
  /** Model id. */
  model: string;
  /** Output token cap. */
  max_tokens: number;
  /** The conversation. */
  messages: ProviderMessageParam[];
  /** System prompt. */
  system?: string;
  /** `true` asks for an event stream. */
  stream?: boolean;
  /** Request metadata (`user_id`). */
  metadata?: { user_id?: string };
  /** Further fields. */
  [field: string]: unknown;
}

/** Token usage as the provider reports it; nested or null values are possible. */
export type ProviderUsage = Record<string, unknown>;

/** A complete message: the non-streaming answer, or the result of a succeeded batch request. */
export interface ProviderMessage {
  /** Message id (`msg_…`); the stateless client uses it as the run id. */
  id: string;
  /** Always `message`. */
  type: "message";
  /** Always `assistant`. */
  role: "assistant";
  /** Model that answered. */
  model: string;
  /** Content blocks in order. */
  content: ProviderContentBlock[];
  /** Why generation stopped (`end_turn`, `max_tokens`, `tool_use`, …); null only mid-stream. */
  stop_reason: string | null;
  /** The stop sequence that matched, if any. */
  stop_sequence?: string | null;
  /** Token usage. */
  usage?: ProviderUsage;
  /** Further fields. */
  [field: string]: unknown;
}

/** Request counts of a message batch by outcome. */
export interface ProviderBatchRequestCounts {
  /** Still processing. */
  processing: number;
  /** Finished successfully. */
  succeeded: number;
  /** Finished with an error. */
  errored: number;
  /** Cancelled before processing. */
  canceled: number;
  /** Expired before processing. */
  expired: number;
}

/** A message batch record (`GET /v1/messages/batches/{id}`). */
export interface ProviderMessageBatch {
  /** Batch id (`msgbatch_…`). */
  id: string;
  /** Always `message_batch`. */
  type: "message_batch";
  /** `in_progress`, `canceling` or `ended`. */
  processing_status: "in_progress" | "canceling" | "ended";
  /** Request counts by outcome. */
  request_counts: ProviderBatchRequestCounts;
  /** Creation time (RFC 3339). */
  created_at: string;
  /** When unprocessed requests expire. */
  expires_at?: string;
  /** When processing ended, or null. */
  ended_at?: string | null;
  /** When cancellation was asked for, or null. */
  cancel_initiated_at?: string | null;
  /** When archived, or null. */
  archived_at?: string | null;
  /** Where the JSONL results are, once ended: absolute, or a path on the base URL. */
  results_url?: string | null;
  /** Further fields. */
  [field: string]: unknown;
}

/** One request of `POST /v1/messages/batches`. */
export interface ProviderBatchRequestParam {
  /** Caller-chosen id, echoed on the result line. */
  custom_id: string;
  /** A non-streaming create body. */
  params: ProviderMessagesCreateParams;
}

/** A completed run of the stateless client: the contract status plus the provider's message. */
export interface ProviderRunStatus extends RuntimeRunStatus {
  /** The complete message as the provider returned it (tool-use blocks included). */
  message: ProviderMessage;
}
