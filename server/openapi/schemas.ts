/**
 * The zod 4 schemas of the service's response bodies. The OpenAPI document is generated from
 * them, and the black-box HTTP tests check every answer they receive against them, so a change
 * of an answer that is not made here fails a test. Each one `satisfies` its type of the wire
 * contract (`wire/`), and its enums are the contract's lists, so what a schema accepts is a value
 * of that type: a schema and the contract cannot drift apart without a type error.
 *
 * @module
 */
import { z } from "zod";
import {
  ACTIVITY_TYPES,
  AUDIT_ACTIONS,
  type AuditPage,
  CAPABILITIES,
  type CustomToolAnswer,
  type HealthStatus,
  type InboxPage,
  type IssuedPrincipal,
  NOTIFICATION_EVENTS,
  NOTIFICATION_FORMATS,
  type PendingToolRequestList,
  PRINCIPAL_ID_PATTERN,
  type PrincipalPage,
  type PrincipalSummary,
  type RecordedToolAnswerList,
  RUN_STATES,
  type RunPage,
  type RunRecord,
  type RuntimeInfo,
  TOOL_ANSWER_RESULTS,
  TOOL_CONFIRMATION_RESULTS,
  TOOL_REQUEST_KINDS,
  type ToolConfirmation,
  TRUST_POLICY_NAME,
  type TrustPolicy,
  type TrustPolicyPage,
  USAGE_GROUPS,
  type UsagePage,
  type WebhookDelivery,
  type WebhookDeliveryPage,
  type WebhookSubscription,
  type WebhookSubscriptionPage,
  type WebhookSubscriptionWithSecret,
} from "../../wire/mod.ts";
import type { ErrorCode } from "../errors.ts";
import {
  moneyAnswer,
  principalPolicyAnswerShape,
  principalSpendSchema,
} from "../schemas/principals.ts";

const timestamp = z.string().describe("RFC 3339 timestamp");
const capability = z.enum(CAPABILITIES);
const name = z.string().describe("the principal's name, when it was given one");
const metadata = z.record(z.string(), z.string()).describe(
  "the principal's metadata pairs, when it was given some",
);
const uuid = z.string().regex(PRINCIPAL_ID_PATTERN)
  .describe("lower-case UUID");

/** `GET /healthz`. */
export const healthSchema = z.strictObject({
  ok: z.literal(true),
}) satisfies z.ZodType<HealthStatus>;

/** `GET /v1/runtime`. */
export const runtimeInfoSchema = z.strictObject({
  interfaceVersion: z.string(),
  principalId: uuid,
  name: name.optional(),
  metadata: metadata.optional(),
  capabilities: z.array(capability),
  expiresAt: timestamp,
  runs: z.boolean().describe("whether the run routes are enabled"),
  ...principalPolicyAnswerShape(),
  spend: principalSpendSchema.optional().describe(
    "what the caller spent and holds in its budget's current period, when it has a budget",
  ),
}) satisfies z.ZodType<RuntimeInfo>;

/** The 201 of `POST /v1/principals`: the new principal with its one-time bearer. */
export const principalIssuedSchema = z.strictObject({
  principalId: uuid,
  name: name.optional(),
  metadata: metadata.optional(),
  capabilities: z.array(capability).min(1),
  expiresAt: timestamp,
  ...principalPolicyAnswerShape(),
  bearer: z.string().regex(/^art_[A-Za-z0-9_-]{43}$/).describe(
    "shown in this answer and its idempotent replays only",
  ),
}) satisfies z.ZodType<IssuedPrincipal>;

/** One entry of `GET /v1/principals`. */
export const principalEntrySchema = z.strictObject({
  principalId: uuid,
  name: name.optional(),
  metadata: metadata.optional(),
  capabilities: z.array(capability),
  expiresAt: timestamp,
  issuerId: uuid,
  createdAt: timestamp,
  ...principalPolicyAnswerShape(),
  revokedAt: timestamp.optional(),
  spend: principalSpendSchema.optional().describe(
    "what it spent and holds in its budget's current period, when it has a budget",
  ),
}) satisfies z.ZodType<PrincipalSummary>;

/** `GET /v1/principals`. */
export const principalPageSchema = z.strictObject({
  principals: z.array(principalEntrySchema),
  nextCursor: z.string().nullable().describe("pass back as `cursor`; null after the last page"),
}) satisfies z.ZodType<PrincipalPage>;

/** A run as answered by the run routes. */
export const runSchema = z.strictObject({
  runId: z.string().describe("the provider's session id"),
  principalId: uuid,
  agentId: z.string(),
  agentVersion: z.int().optional(),
  environmentId: z.string(),
  title: z.string().optional(),
  state: z.enum(RUN_STATES),
  stopReason: z.string().optional(),
  usage: z.record(z.string(), z.number()).optional(),
  listCost: moneyAnswer.optional().describe("the list cost the provider reported so far"),
  maxListCost: moneyAnswer.optional().describe("the ceiling the provider enforces on it"),
  lastEventSeq: z.int().min(0),
  createdAt: timestamp,
  updatedAt: timestamp,
  endedAt: timestamp.optional(),
}) satisfies z.ZodType<RunRecord>;

/** `GET /v1/runs`. */
export const runPageSchema = z.strictObject({
  runs: z.array(runSchema),
  nextCursor: z.string().nullable(),
}) satisfies z.ZodType<RunPage>;

/** A trust policy, as `POST` and `GET /v1/trust-policies` answer it. */
export const trustPolicySchema = z.strictObject({
  name: z.string().regex(TRUST_POLICY_NAME),
  issuer: z.string().describe("the OIDC issuer (its tokens' iss)"),
  audience: z.string(),
  claims: z.record(z.string(), z.string()).describe("claim name to exact value or * glob"),
  capabilities: z.array(capability).min(1),
  ...principalPolicyAnswerShape(),
  ttlSeconds: z.int().min(1),
  creatorId: uuid,
  createdAt: timestamp,
}) satisfies z.ZodType<TrustPolicy>;

/** `GET /v1/trust-policies`. */
export const trustPolicyPageSchema = z.strictObject({
  trustPolicies: z.array(trustPolicySchema),
  nextCursor: z.string().nullable().describe("pass back as `cursor`; null after the last page"),
}) satisfies z.ZodType<TrustPolicyPage>;

const usageTotals = {
  inputTokens: z.int().min(0),
  outputTokens: z.int().min(0),
  cacheReadInputTokens: z.int().min(0),
  cacheCreationInputTokens: z.int().min(0),
  listCost: moneyAnswer,
};

/** `GET /v1/usage`. */
export const usagePageSchema = z.strictObject({
  from: timestamp,
  to: timestamp,
  groupBy: z.enum(USAGE_GROUPS),
  groups: z.array(z.strictObject({
    key: z.string().describe("a principal id, an agent id or a UTC day (YYYY-MM-DD)"),
    ...usageTotals,
  })),
  total: z.strictObject(usageTotals),
}) satisfies z.ZodType<UsagePage>;

/** `GET /v1/audit`. */
export const auditPageSchema = z.strictObject({
  entries: z.array(z.strictObject({
    seq: z.int().min(1),
    at: timestamp,
    action: z.enum(AUDIT_ACTIONS),
    actorId: z.string(),
    subjectId: z.string().optional(),
    subjectName: z.string().optional().describe(
      "the subject's name, on principal.issued and principal.revoked when it has one",
    ),
    runId: z.string().optional(),
    trustPolicy: z.string().optional(),
    subscriptionId: z.string().optional().describe("on webhook.* entries: the subscription"),
    token: z.strictObject({
      issuer: z.string(),
      subject: z.string(),
      jwtId: z.string(),
      claims: z.record(z.string(), z.string()),
    }).optional().describe("token.exchanged: the ID token's iss, sub, jti and matched claims"),
    correlationId: z.string(),
    outcome: z.string().describe("`ok`, or a stable error code"),
  })),
  nextCursor: z.string().nullable(),
}) satisfies z.ZodType<AuditPage>;

/** One entry of a run's event log: a `RunStreamEvent` (by `type`) with its `seq` and `at`. */
export const runEventSchema = z.looseObject({
  seq: z.int().min(1),
  at: timestamp,
  type: z.string(),
});

/** The JSON page of `GET /v1/runs/{runId}/events`. */
export const runEventPageSchema = z.strictObject({
  events: z.array(runEventSchema),
  nextAfter: z.int().min(0),
  terminal: z.boolean(),
});

/** `GET /v1/runs/{runId}/pending`. */
export const pendingSchema = z.strictObject({
  pending: z.array(z.strictObject({
    toolUseId: z.string(),
    kind: z.enum(TOOL_REQUEST_KINDS),
    name: z.string(),
    input: z.unknown(),
    requestedAt: timestamp,
  })),
}) satisfies z.ZodType<PendingToolRequestList>;

/** `GET /v1/pending`: the cross-run inbox. */
export const inboxSchema = z.strictObject({
  pending: z.array(z.strictObject({
    runId: z.string(),
    toolUseId: z.string(),
    kind: z.enum(TOOL_REQUEST_KINDS),
    name: z.string(),
    input: z.unknown(),
    inputTruncated: z.boolean().optional().describe(
      "the input was longer than 16 KiB of JSON: `input` is the text of its first 16 KiB",
    ),
    requestedAt: timestamp,
    deniedAt: timestamp.describe("when the runtime answers it by itself (fail closed)"),
    title: z.string().optional(),
    agentId: z.string(),
    principalId: z.string().describe("the principal that started the run"),
    principalName: z.string().optional().describe("its name, when it has one"),
  })),
  nextCursor: z.string().nullable(),
  activitySeq: z.int().min(0).describe(
    "the activity log's seq when the page was read: follow GET /v1/activity after it",
  ),
}) satisfies z.ZodType<InboxPage>;

/** One activity event (by `type`): see `wire/activity.ts`. */
export const activityEventSchema = z.looseObject({
  seq: z.int().min(1),
  at: timestamp,
  type: z.enum(ACTIVITY_TYPES),
  runId: z.string(),
  principalId: z.string().describe("the principal that owns the run"),
});

/** The JSON page of `GET /v1/activity`. */
export const activityPageSchema = z.strictObject({
  events: z.array(activityEventSchema),
  nextAfter: z.int().min(0).describe("pass back as `after`"),
});

const subscriptionShape = {
  subscriptionId: z.string(),
  principalId: z.string().describe("the owner: it receives events of the runs it may read"),
  url: z.string(),
  events: z.array(z.enum(NOTIFICATION_EVENTS)),
  format: z.enum(NOTIFICATION_FORMATS),
  description: z.string().optional(),
  state: z.enum(["active", "disabled"]),
  consecutiveFailures: z.int().min(0),
  createdAt: timestamp,
  disabledAt: timestamp.optional(),
  secretRotatedAt: timestamp.optional(),
  previousSecretExpiresAt: timestamp.optional().describe(
    "when the secret before the last rotation stops signing",
  ),
};

/** A notification subscription (never its secret). */
export const webhookSubscriptionSchema = z.strictObject(subscriptionShape) satisfies z.ZodType<
  WebhookSubscription
>;

/** A creation's or a rotation's answer: the subscription with its secret, shown once. */
export const webhookSubscriptionSecretSchema = z.strictObject({
  ...subscriptionShape,
  secret: z.string().regex(/^whsec_[A-Za-z0-9+/]+=*$/).describe(
    "the signing secret: shown in this answer and its idempotent replays only",
  ),
}) satisfies z.ZodType<WebhookSubscriptionWithSecret>;

/** `GET /v1/webhook-subscriptions`. */
export const webhookSubscriptionPageSchema = z.strictObject({
  subscriptions: z.array(webhookSubscriptionSchema),
  nextCursor: z.string().nullable(),
}) satisfies z.ZodType<WebhookSubscriptionPage>;

/** A delivery of a subscription, with its attempts. */
export const webhookDeliverySchema = z.strictObject({
  deliveryId: z.string().describe("the webhook-id of every attempt"),
  subscriptionId: z.string(),
  eventType: z.enum(NOTIFICATION_EVENTS),
  runId: z.string(),
  createdAt: timestamp,
  state: z.enum(["pending", "delivered", "failed"]),
  attempts: z.array(z.strictObject({
    at: timestamp,
    status: z.int().optional(),
    error: z.string().optional(),
    durationMs: z.number().min(0),
  })),
  nextAttemptAt: timestamp.optional(),
}) satisfies z.ZodType<WebhookDelivery>;

/** `GET /v1/webhook-subscriptions/{id}/deliveries`. */
export const webhookDeliveryPageSchema = z.strictObject({
  deliveries: z.array(webhookDeliverySchema),
  nextCursor: z.string().nullable(),
}) satisfies z.ZodType<WebhookDeliveryPage>;
/** The 200 of `GET /v1/runs/{runId}/answers`. */
export const answersSchema = z.strictObject({
  answers: z.array(z.strictObject({
    toolUseId: z.string(),
    kind: z.enum(TOOL_REQUEST_KINDS),
    result: z.enum(TOOL_ANSWER_RESULTS),
    answeredBy: z.string(),
    answeredByName: z.string().optional(),
    answeredAt: timestamp,
  })),
}) satisfies z.ZodType<RecordedToolAnswerList>;

/** The 200 of `POST /v1/runs/{runId}/tool-confirmations`. */
export const toolConfirmationSchema = z.strictObject({
  toolUseId: z.string(),
  result: z.enum(TOOL_CONFIRMATION_RESULTS),
  answeredBy: z.string(),
  answeredAt: timestamp,
}) satisfies z.ZodType<ToolConfirmation>;

/** The 200 of `POST /v1/runs/{runId}/custom-tool-results`. */
export const customToolResultSchema = z.strictObject({
  toolUseId: z.string(),
  answeredBy: z.string(),
  answeredAt: timestamp,
}) satisfies z.ZodType<CustomToolAnswer>;

/** The OpenAPI document itself (`GET /openapi.json`): an object with `openapi: 3.1.x`. */
export const openApiSchema = z.looseObject({ openapi: z.string().startsWith("3.1.") });

/** A JSON-RPC answer of the MCP endpoint (opaque here: MCP's own schema describes it). */
export const jsonRpcSchema = z.looseObject({ jsonrpc: z.literal("2.0") });

/** The error body, its `code` limited to `codes`. */
export function errorSchema(codes: readonly ErrorCode[]): z.ZodType {
  return z.strictObject({
    error: z.looseObject({
      code: z.enum(codes as [ErrorCode, ...ErrorCode[]]),
      layer: z.enum(["interface", "auth", "authority", "idempotency", "internal"]),
      message: z.string(),
      correlationId: z.string(),
    }).describe(
      "Further camelCase fields by code: header, supportedVersions, requiredCapability, " +
        "details (a list of { path, message } on invalidRequest; { reason, claim? } on a " +
        "refused token exchange; { claim } on policyMismatch), maxBytes, allowedMethods, " +
        "providerErrorType, providerStatus, limit, left, periodEnd",
    ),
  });
}

/**
 * The provider's error shape, which every refusal of the `/provider` interface takes
 * (`server/runs/native_error.ts`): `{type: "error", error: {type, message, details?}, request_id}`.
 */
export const nativeErrorSchema = z.strictObject({
  type: z.literal("error"),
  error: z.looseObject({
    type: z.string().describe("the provider's error type, such as not_found_error"),
    message: z.string(),
    details: z.looseObject({ error_code: z.string() }).optional()
      .describe("the service's own code, for refusals of the service"),
  }),
  request_id: z.string().nullable(),
});

/** The schemas named in the document's components, by name. */
export const NAMED_SCHEMAS: Readonly<Record<string, z.ZodType>> = {
  Health: healthSchema,
  ProviderErrorBody: nativeErrorSchema,
  RuntimeInfo: runtimeInfoSchema,
  PrincipalIssued: principalIssuedSchema,
  PrincipalPage: principalPageSchema,
  Run: runSchema,
  RunPage: runPageSchema,
  RunEventPage: runEventPageSchema,
  Pending: pendingSchema,
  Inbox: inboxSchema,
  ActivityPage: activityPageSchema,
  WebhookSubscription: webhookSubscriptionSchema,
  WebhookSubscriptionWithSecret: webhookSubscriptionSecretSchema,
  WebhookSubscriptionPage: webhookSubscriptionPageSchema,
  WebhookDelivery: webhookDeliverySchema,
  WebhookDeliveryPage: webhookDeliveryPageSchema,
  Answers: answersSchema,
  ToolConfirmation: toolConfirmationSchema,
  CustomToolResult: customToolResultSchema,
  AuditPage: auditPageSchema,
  TrustPolicy: trustPolicySchema,
  TrustPolicyPage: trustPolicyPageSchema,
  UsagePage: usagePageSchema,
  OpenApiDocument: openApiSchema,
  JsonRpcMessage: jsonRpcSchema,
};
