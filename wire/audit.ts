/**
 * The audit log on the wire: the actions it records, an entry, a page of `GET /v1/audit` and its
 * query. Entries never hold a bearer, key, secret or message content.
 *
 * @module
 */

/**
 * Every action the audit log records, in canonical order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AUDIT_ACTIONS } from "./audit.ts";
 * assert.equal(AUDIT_ACTIONS[0], "principal.issued");
 * ```
 */
export const AUDIT_ACTIONS = [
  "principal.issued",
  "principal.revoked",
  "run.started",
  "run.message",
  "run.cancelled",
  "tool.confirmed",
  "tool.responded",
  "webhook.accepted",
  "trustPolicy.created",
  "trustPolicy.deleted",
  "token.exchanged",
  "webhook.subscribed",
  "webhook.unsubscribed",
  "webhook.secret_rotated",
  "webhook.disabled",
  "budget.exhausted",
] as const;

/** An action the audit log records: one of {@linkcode AUDIT_ACTIONS}. */
export type AuditAction = typeof AUDIT_ACTIONS[number];

/**
 * What a `token.exchanged` entry records of the ID token: who it named and which of its claims
 * the policy matched, never the token itself.
 */
export interface ExchangedToken {
  /** The token's issuer (`iss`). */
  issuer: string;
  /** The token's subject (`sub`). */
  subject: string;
  /** The token's id (`jti`), used once. */
  jwtId: string;
  /** Each claim the policy matched, with the token's value as matched. */
  claims: Record<string, string>;
}

/** One audit entry. */
export interface AuditEntry {
  /** Position in the log, increasing in the order entries were appended, from 1. */
  seq: number;
  /** RFC 3339 time of the action. */
  at: string;
  /** What happened (a later service may add actions, hence `string` too). */
  action: AuditAction | (string & Record<never, never>);
  /** The principal that acted. */
  actorId: string;
  /** The principal acted upon, where there is one. */
  subjectId?: string;
  /** That principal's name, on `principal.issued` and `principal.revoked` when it has one. */
  subjectName?: string;
  /** The run concerned, where there is one. */
  runId?: string;
  /** The trust policy concerned (created, deleted, or exchanged under), where there is one. */
  trustPolicy?: string;
  /** The notification subscription concerned (`webhook.subscribed`, …), where there is one. */
  subscriptionId?: string;
  /** On `token.exchanged`: the ID token's issuer, subject, id and matched claims. */
  token?: ExchangedToken;
  /** Correlation id of the request that acted. */
  correlationId: string;
  /** How it ended: `ok`, or a stable error code. */
  outcome: string;
}

/** The query of `GET /v1/audit`. */
export interface ListAuditParams {
  /** Page size, 1 to 100 (service default 20). */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  /** Only entries whose actor or subject is this principal. */
  principalId?: string;
  /** Only entries of this action. */
  action?: AuditAction | (string & Record<never, never>);
}

/** One page of `GET /v1/audit`: newest first. */
export interface AuditPage {
  /** The entries of this page. */
  entries: AuditEntry[];
  /** The cursor of the next page, or null on the last page. */
  nextCursor: string | null;
}
