/**
 * What the route table does not say about each route: its summary, query parameters, answers by
 * status with their body schemas, and the error codes its handler may answer beyond the shared
 * rules' (those follow from the route's definition: see `contract.ts`). Keyed by
 * `METHOD pattern`, as in the route table; a route of the table without a declaration here makes
 * the document's generation fail, so a new route cannot be forgotten.
 *
 * @module
 */
import type { z } from "zod";
import { RUN_STATES, USAGE_GROUPS } from "../../wire/mod.ts";
import type { ErrorCode } from "../errors.ts";
import { NATIVE_OPERATIONS, NATIVE_PREFIX, type NativeOperation } from "../native/operations.ts";
import {
  activityPageSchema,
  answersSchema,
  auditPageSchema,
  customToolResultSchema,
  healthSchema,
  inboxSchema,
  jsonRpcSchema,
  openApiSchema,
  pendingSchema,
  principalIssuedSchema,
  principalPageSchema,
  runEventPageSchema,
  runPageSchema,
  runSchema,
  runtimeInfoSchema,
  toolConfirmationSchema,
  trustPolicyPageSchema,
  trustPolicySchema,
  usagePageSchema,
  webhookDeliveryPageSchema,
  webhookDeliverySchema,
  webhookSubscriptionPageSchema,
  webhookSubscriptionSchema,
  webhookSubscriptionSecretSchema,
} from "./schemas.ts";

/** One successful answer of a route. */
export interface AnswerDeclaration {
  /** What it means. */
  readonly description: string;
  /** Schema of its JSON body; absent: no body (or an opaque one, see `contentType`). */
  readonly schema?: z.ZodType;
  /**
   * A further content type answered instead of the JSON body (chosen by `Accept`), such as
   * `text/event-stream`; its body is not checked against `schema`.
   */
  readonly contentType?: string;
  /** Response headers that matter beyond the common ones, such as `cache-control`. */
  readonly headers?: readonly string[];
}

/** One query parameter. */
export interface QueryDeclaration {
  /** Its name. */
  readonly name: string;
  /** What it selects. */
  readonly description: string;
  /** Its JSON Schema. */
  readonly schema: Record<string, unknown>;
}

/** A route's declaration. */
export interface RouteDeclaration {
  /** One-line summary. */
  readonly summary: string;
  /** Longer text. */
  readonly description?: string;
  /** Grouping tag. */
  readonly tag: string;
  /** Query parameters. */
  readonly query?: readonly QueryDeclaration[];
  /** Successful answers by status. */
  readonly answers: Readonly<Record<number, AnswerDeclaration>>;
  /** Error codes the handler itself may answer (the shared rules' are added). */
  readonly errors?: readonly ErrorCode[];
  /** A body the route reads itself (no `body` schema in its definition), such as a webhook. */
  readonly rawBody?: { readonly contentType: string; readonly description: string };
  /** Left out of the document, with the reason (such as methods that only answer 405). */
  readonly omit?: string;
}

const limit = (max: number, fallback: number): QueryDeclaration => ({
  name: "limit",
  description: `Page size, 1 to ${max} (default ${fallback}).`,
  schema: { type: "integer", minimum: 1, maximum: max, default: fallback },
});
const cursor: QueryDeclaration = {
  name: "cursor",
  description: "The `nextCursor` of the previous page.",
  schema: { type: "string", minLength: 1 },
};

const PROVIDER_ERRORS: readonly ErrorCode[] = [
  "providerNotConfigured",
  "providerError",
  "providerUnavailable",
];

const MCP = "The MCP streamable HTTP endpoint: an opaque JSON-RPC endpoint with its own rules.";

/** What each access of the `/provider` interface adds to an operation's description. */
const NATIVE_ACCESS: Readonly<Record<NativeOperation["access"], string>> = {
  createSession: "Starts a run of the caller through the gateway's one start path.",
  listSessions: "The caller's runs (approvers and admins: all), each read from the provider.",
  getSession: "A session the caller may read, passed on.",
  updateSession: "Title and metadata of the caller's own session; other fields need admin.",
  archiveSession: "The caller's own session, passed on.",
  deleteSession: "The caller's own session, passed on.",
  listEvents: "From the run's native log: the provider's own events.",
  sendEvents: "Each event through the gateway: follow-ups, interrupts, exactly-once answers.",
  streamEvents: "The run's native log as SSE, resumable with `Last-Event-ID` on any replica.",
  thread: "A thread of a session the caller may read, passed on.",
  threadStream: "A thread of a session the caller may read, its stream passed on.",
  agentRead: "Only the agents the caller may use; others are not found.",
  environmentRead: "Only the environments the caller may use; others are not found.",
  admin: "`authority:admin` only, passed on as it is.",
};

/** The declaration of one operation of the provider's own API (`server/native/`). */
function nativeDeclaration(operation: NativeOperation): RouteDeclaration {
  const streams = operation.access === "streamEvents" || operation.access === "threadStream";
  return {
    summary: operation.summary,
    description: `The provider's own \`${operation.method} ${operation.path}\`. ` +
      NATIVE_ACCESS[operation.access],
    tag: "provider",
    answers: {
      200: {
        description: "The provider's answer, in its own shape.",
        contentType: streams ? "text/event-stream" : "application/json",
      },
    },
    ...((operation.access === "admin" || operation.access === "updateSession") &&
        operation.method === "POST"
      ? {
        rawBody: {
          contentType: "application/json",
          description: "The provider's own body, passed on as it is.",
        },
      }
      : {}),
  };
}

/** Every route's declaration, keyed by `METHOD pattern`. */
export const ROUTE_DECLARATIONS: Readonly<Record<string, RouteDeclaration>> = {
  "GET /healthz": {
    summary: "Health",
    description: "Needs no header. Says nothing about principals or the store.",
    tag: "health",
    answers: {
      200: { description: "Serving.", schema: healthSchema, headers: ["cache-control"] },
    },
  },
  "HEAD /healthz": {
    summary: "Health, without a body",
    tag: "health",
    answers: { 200: { description: "Serving.", headers: ["cache-control"] } },
  },
  "GET /openapi.json": {
    summary: "This document",
    description: "Needs no header; holds nothing secret.",
    tag: "health",
    answers: { 200: { description: "The OpenAPI 3.1 document.", schema: openApiSchema } },
  },
  "GET /v1/runtime": {
    summary: "The interface version and the caller",
    tag: "runtime",
    answers: { 200: { description: "The caller and its run policy.", schema: runtimeInfoSchema } },
  },
  "POST /v1/principals": {
    summary: "Issue a scoped principal",
    description:
      "Answers its bearer once (and in idempotent replays). Layer `authority` 422s are the " +
      "grant rules: capabilities within the caller's, expiry within 90 days and the caller's.",
    tag: "principals",
    answers: {
      201: {
        description: "Issued.",
        schema: principalIssuedSchema,
        headers: ["cache-control"],
      },
    },
    errors: ["principalExists"],
  },
  "GET /v1/principals": {
    summary: "List principals, a page at a time",
    tag: "principals",
    query: [limit(500, 100), cursor],
    answers: { 200: { description: "A page, oldest first.", schema: principalPageSchema } },
    errors: ["invalidRequest"],
  },
  "DELETE /v1/principals/:principalId": {
    summary: "Revoke a principal",
    description: "Immediate on every replica sharing the store.",
    tag: "principals",
    answers: { 204: { description: "Revoked now, or already revoked." } },
    errors: ["notFound", "invalidRequest"],
  },
  "POST /v1/runs": {
    summary: "Start a run",
    tag: "runs",
    answers: { 201: { description: "Started.", schema: runSchema } },
    errors: [
      ...PROVIDER_ERRORS,
      "agentNotAllowed",
      "resourceNotAllowed",
      "runQuotaExceeded",
      "budgetExceeded",
      "modelNotBudgetable",
      "idempotencyUnsettled",
    ],
  },
  "GET /v1/runs": {
    summary: "List runs, newest first",
    tag: "runs",
    query: [
      limit(100, 20),
      cursor,
      {
        name: "state",
        description: "Only runs in this state.",
        schema: {
          type: "string",
          enum: [...RUN_STATES],
        },
      },
      {
        name: "principalId",
        description: "Only this principal's runs (another's needs session:approve or admin).",
        schema: { type: "string", minLength: 1, maxLength: 512 },
      },
    ],
    answers: { 200: { description: "A page.", schema: runPageSchema } },
    errors: ["providerNotConfigured", "invalidRequest"],
  },
  "GET /v1/runs/:runId": {
    summary: "Read a run",
    description: "Served from the run's record; an active run is refreshed from the provider " +
      "first when its status was not read in the last second (by any caller, on any replica). " +
      "Another principal's is 404.",
    tag: "runs",
    answers: { 200: { description: "The run.", schema: runSchema } },
    errors: [...PROVIDER_ERRORS, "runNotFound"],
  },
  "POST /v1/runs/:runId/cancel": {
    summary: "Cancel a run",
    tag: "runs",
    answers: { 202: { description: "Cancelling.", schema: runSchema } },
    errors: [...PROVIDER_ERRORS, "runNotFound"],
  },
  "POST /v1/runs/:runId/messages": {
    summary: "Send user turns to a run",
    tag: "runs",
    answers: { 202: { description: "Sent.", schema: runSchema } },
    errors: [
      ...PROVIDER_ERRORS,
      "runNotFound",
      "resourceNotAllowed",
      "runQuotaExceeded",
      "budgetExceeded",
      "modelNotBudgetable",
      "idempotencyUnsettled",
    ],
  },
  "GET /v1/runs/:runId/events": {
    summary: "A run's events: an SSE stream, or a JSON page",
    description: "`Accept: text/event-stream`: `retry`, then `id: <seq>`, `event: <type>`, " +
      "`data: <JSON>` per event; `Last-Event-ID` or `after` resumes after that seq; the stream " +
      "ends after a terminal event. `Accept: application/json`: a page after `after`.",
    tag: "runs",
    query: [
      {
        name: "after",
        description: "Events after this seq (default 0).",
        schema: { type: "integer", minimum: 0 },
      },
      limit(500, 100),
    ],
    answers: {
      200: {
        description: "The events.",
        schema: runEventPageSchema,
        contentType: "text/event-stream",
      },
    },
    errors: [...PROVIDER_ERRORS, "runNotFound", "invalidRequest", "resourceExhausted"],
  },
  "GET /v1/runs/:runId/pending": {
    summary: "A run's pending tool requests",
    description: "A finished run has none. An active run's history is read from the provider " +
      "at most once a second per run, across callers and replicas.",
    tag: "runs",
    answers: { 200: { description: "Pending requests.", schema: pendingSchema } },
    errors: [...PROVIDER_ERRORS, "runNotFound"],
  },
  "GET /v1/pending": {
    summary: "The cross-run inbox: every pending tool request the caller may see",
    description: "Approvers and admins: every run's; others: their own runs'. Served from the " +
      "store (no provider call). A page covers up to `limit` runs waiting in `requires_action`, " +
      "newest first, each with all its pending requests; `activitySeq` is where to follow " +
      "`GET /v1/activity` from.",
    tag: "runs",
    query: [limit(100, 50), cursor],
    answers: { 200: { description: "A page of the inbox.", schema: inboxSchema } },
    errors: ["providerNotConfigured", "invalidRequest"],
  },
  "GET /v1/activity": {
    summary: "The activity feed: changes of the runs the caller may see",
    description: "`Accept: text/event-stream`: `retry`, then `id: <seq>`, `event: <type>`, " +
      "`data: <JSON>` per change (`run.created`, `run.state`, `tool.pending`, " +
      "`tool.answered`); `Last-Event-ID` or `after` resumes after that seq, else it starts " +
      "from now. Counts against the event stream limits. `Accept: application/json`: a page " +
      "after `after`.",
    tag: "runs",
    query: [
      {
        name: "after",
        description: "Changes after this seq (stream default: from now; page default: 0).",
        schema: { type: "integer", minimum: 0 },
      },
      limit(500, 100),
    ],
    answers: {
      200: {
        description: "The changes.",
        schema: activityPageSchema,
        contentType: "text/event-stream",
      },
    },
    errors: ["providerNotConfigured", "invalidRequest", "resourceExhausted"],
  },
  "POST /v1/webhook-subscriptions": {
    summary: "Subscribe to notification webhooks",
    description: "Deliveries of the chosen events of the runs the caller may read, signed per " +
      "Standard Webhooks. The target must resolve to public addresses only (unless `serve` " +
      "allows private targets): else 422 `webhookTargetNotAllowed`. The answer holds the " +
      "signing secret, once (and in idempotent replays). At most 10 subscriptions per " +
      "principal by default: past it, 429 `resourceExhausted`.",
    tag: "notifications",
    answers: {
      201: {
        description: "Subscribed.",
        schema: webhookSubscriptionSecretSchema,
        headers: ["cache-control"],
      },
    },
    errors: ["providerNotConfigured", "webhookTargetNotAllowed", "resourceExhausted"],
  },
  "GET /v1/webhook-subscriptions": {
    summary: "List notification subscriptions",
    description: "The caller's own (admins: everyone's), oldest first, without secrets.",
    tag: "notifications",
    query: [limit(100, 50), cursor],
    answers: { 200: { description: "A page.", schema: webhookSubscriptionPageSchema } },
    errors: ["providerNotConfigured", "invalidRequest"],
  },
  "GET /v1/webhook-subscriptions/:subscriptionId": {
    summary: "Read a notification subscription",
    description: "Another principal's is 404 (admins read every one).",
    tag: "notifications",
    answers: { 200: { description: "The subscription.", schema: webhookSubscriptionSchema } },
    errors: ["providerNotConfigured", "notFound"],
  },
  "DELETE /v1/webhook-subscriptions/:subscriptionId": {
    summary: "Delete a notification subscription",
    description: "With its deliveries; nothing more is sent.",
    tag: "notifications",
    answers: { 204: { description: "Deleted." } },
    errors: ["providerNotConfigured", "notFound"],
  },
  "POST /v1/webhook-subscriptions/:subscriptionId/rotate-secret": {
    summary: "Rotate a subscription's signing secret",
    description: "A new secret signs from now on; the one before keeps signing for 24 h " +
      "(deliveries carry both signatures meanwhile). The answer holds the new secret, once.",
    tag: "notifications",
    answers: {
      200: {
        description: "Rotated.",
        schema: webhookSubscriptionSecretSchema,
        headers: ["cache-control"],
      },
    },
    errors: ["providerNotConfigured", "notFound"],
  },
  "GET /v1/webhook-subscriptions/:subscriptionId/deliveries": {
    summary: "A subscription's deliveries and their attempts",
    description: "Newest first, each with its attempts (status or error, duration).",
    tag: "notifications",
    query: [limit(100, 50), cursor],
    answers: { 200: { description: "A page.", schema: webhookDeliveryPageSchema } },
    errors: ["providerNotConfigured", "notFound", "invalidRequest"],
  },
  "POST /v1/webhook-subscriptions/:subscriptionId/deliveries/:deliveryId/redeliver": {
    summary: "Send a delivery again",
    description: "It becomes pending, due now, with the same webhook-id.",
    tag: "notifications",
    answers: { 202: { description: "Pending again.", schema: webhookDeliverySchema } },
    errors: ["providerNotConfigured", "notFound", "webhookSubscriptionDisabled"],
  },
  "GET /v1/runs/:runId/answers": {
    summary: "Who answered a run's tool requests",
    description: "The run's answered tool requests, oldest answer first, each with the " +
      "answering principal (and its name when it has one; `runtime` for the fail-closed " +
      "default). From the store: no provider call. Kept 7 days.",
    tag: "runs",
    answers: { 200: { description: "The answers.", schema: answersSchema } },
    errors: ["providerNotConfigured", "runNotFound"],
  },

  "POST /v1/runs/:runId/tool-confirmations": {
    summary: "Allow or deny a tool call",
    description: "Exactly one answer per tool request, by anyone, on any replica.",
    tag: "runs",
    answers: { 200: { description: "Answered.", schema: toolConfirmationSchema } },
    errors: [
      ...PROVIDER_ERRORS,
      "runNotFound",
      "toolUseNotFound",
      "alreadyAnswered",
    ] as ErrorCode[],
  },
  "POST /v1/runs/:runId/custom-tool-results": {
    summary: "Answer a custom tool call",
    description: "Exactly one answer per tool request, by anyone, on any replica.",
    tag: "runs",
    answers: { 200: { description: "Answered.", schema: customToolResultSchema } },
    errors: [
      ...PROVIDER_ERRORS,
      "runNotFound",
      "resourceNotAllowed",
      "toolUseNotFound",
      "alreadyAnswered",
    ] as ErrorCode[],
  },
  "POST /webhooks/provider": {
    summary: "Provider webhook intake",
    description: "Exists only when signing secrets are configured. Verified with the Standard " +
      "Webhooks rules; deliveries are deduplicated by the payload's `id`. At most 16 deliveries " +
      "(`--webhook-max-unverified`) are read and verified at once; one more is 429 " +
      "`resourceExhausted` with `Retry-After`.",
    tag: "webhooks",
    rawBody: {
      contentType: "application/json",
      description: "The signed delivery, at most 64 KiB by default (`--webhook-max-body-bytes`), " +
        "verified byte for byte.",
    },
    answers: { 204: { description: "Accepted, or a repeat of an accepted delivery." } },
    errors: [
      "webhookVerificationFailed",
      "payloadTooLarge",
      "deadlineExceeded",
      "resourceExhausted",
    ] as ErrorCode[],
  },
  "GET /v1/audit": {
    summary: "The audit log, newest first",
    tag: "audit",
    query: [
      limit(100, 20),
      cursor,
      {
        name: "principalId",
        description: "Entries whose actor or subject it is.",
        schema: { type: "string", minLength: 1, maxLength: 512 },
      },
      {
        name: "action",
        description: "Entries of this action.",
        schema: { type: "string" },
      },
    ],
    answers: { 200: { description: "A page.", schema: auditPageSchema } },
    errors: ["invalidRequest"],
  },
  "POST /v1/trust-policies": {
    summary: "Create a trust policy for the token exchange",
    description: "Which OIDC issuer, audience and claims a CI job's ID token must have, and " +
      "what the principal it is exchanged for gets. Layer `authority` 422s are the grant " +
      "rules: capabilities and run policy within the caller's, never authority:admin; the " +
      "issuer an https URL.",
    tag: "trust-policies",
    answers: { 201: { description: "Created.", schema: trustPolicySchema } },
    errors: ["trustPolicyExists"],
  },
  "GET /v1/trust-policies": {
    summary: "List trust policies by name, a page at a time",
    tag: "trust-policies",
    query: [limit(500, 100), cursor],
    answers: { 200: { description: "A page, by name.", schema: trustPolicyPageSchema } },
    errors: ["invalidRequest"],
  },
  "DELETE /v1/trust-policies/:name": {
    summary: "Delete a trust policy",
    description: "No exchange under it issues anything from now on, on every replica; " +
      "principals it issued keep their expiry.",
    tag: "trust-policies",
    answers: { 204: { description: "Deleted." } },
    errors: ["notFound"],
  },
  "POST /v1/token-exchange": {
    summary: "Exchange a CI job's OIDC ID token for a principal",
    description: "No bearer: the body carries the credential (RFC 8693 style). The answer is " +
      "a principal as `POST /v1/principals` answers it, with its one-time bearer. A refused " +
      "token is 401 `authenticationFailed` with `details.reason`; claims the policy does not " +
      "match are 403 `policyMismatch` with `details.claim`; 429 past the rate limits.",
    tag: "trust-policies",
    answers: {
      201: {
        description: "Exchanged.",
        schema: principalIssuedSchema,
        headers: ["cache-control"],
      },
    },
    errors: ["authenticationFailed", "policyMismatch"],
  },
  "GET /console": {
    summary: "The web console: to its page",
    description: "A relative redirect to `console/`. Every answer under `/console` carries the " +
      "console's Content Security Policy.",
    tag: "console",
    answers: { 308: { description: "To the page.", headers: ["location"] } },
  },
  "GET /console/": {
    summary: "The web console's page",
    description: "Needs no header: the page signs in with a bearer the user pastes and calls " +
      "the API from the browser. `no-cache` with an `etag`.",
    tag: "console",
    answers: {
      200: {
        description: "The page.",
        contentType: "text/html",
        headers: ["cache-control", "content-security-policy", "etag"],
      },
      304: { description: "Not modified (`If-None-Match`).", headers: ["etag"] },
    },
  },
  "GET /console/:version/:file": {
    summary: "A file of the web console",
    description: "A script, style sheet or image of the console's current version (the page " +
      "names it), cached for a year; any other version or file is 404.",
    tag: "console",
    answers: {
      200: {
        description: "The file.",
        contentType: "*/*",
        headers: ["cache-control", "content-security-policy", "etag"],
      },
      304: { description: "Not modified (`If-None-Match`).", headers: ["etag"] },
    },
    errors: ["notFound"],
  },
  "GET /v1/usage": {
    summary: "Tokens and list cost, summed by principal, agent or day",
    description: "Admins see every principal's usage (or one's, with principalId); everyone " +
      "else sees only their own. Sums the usage settled in [from, to): at most 366 days, at " +
      "most 1000 groups.",
    tag: "usage",
    query: [
      {
        name: "from",
        description: "RFC 3339 start, inclusive (default: the start of the current UTC month).",
        schema: { type: "string", format: "date-time" },
      },
      {
        name: "to",
        description: "RFC 3339 end, exclusive (default: now).",
        schema: { type: "string", format: "date-time" },
      },
      {
        name: "groupBy",
        description: "How to group the sums (default principal).",
        schema: { type: "string", enum: [...USAGE_GROUPS], default: "principal" },
      },
      {
        name: "principalId",
        description: "Only this principal's usage (admins; others may name only themselves).",
        schema: { type: "string", minLength: 1, maxLength: 512 },
      },
    ],
    answers: { 200: { description: "The sums.", schema: usagePageSchema } },
    errors: ["invalidRequest", "missingCapability"],
  },
  "POST /v1/mcp": {
    summary: "MCP: one JSON-RPC message",
    description: MCP,
    tag: "mcp",
    answers: {
      200: {
        description: "A JSON-RPC answer, as an SSE stream or one JSON body.",
        schema: jsonRpcSchema,
        contentType: "text/event-stream",
      },
      202: { description: "A notification or response was accepted." },
    },
  },
  "GET /v1/mcp": {
    summary: "MCP: the session's SSE channel",
    description: MCP,
    tag: "mcp",
    answers: { 200: { description: "The SSE channel.", contentType: "text/event-stream" } },
  },
  "DELETE /v1/mcp": {
    summary: "MCP: end the session",
    description: MCP,
    tag: "mcp",
    answers: { 200: { description: "Ended." } },
  },
  "OPTIONS /v1/mcp": { summary: "", tag: "mcp", answers: {}, omit: "CORS preflight" },
  "PUT /v1/mcp": { summary: "", tag: "mcp", answers: {}, omit: "answers 405" },
  "PATCH /v1/mcp": { summary: "", tag: "mcp", answers: {}, omit: "answers 405" },
  "HEAD /v1/mcp": { summary: "", tag: "mcp", answers: {}, omit: "answers 405" },
  ...Object.fromEntries(
    NATIVE_OPERATIONS.map((operation) => [
      `${operation.method} ${NATIVE_PREFIX}${operation.path}`,
      nativeDeclaration(operation),
    ]),
  ),
};
