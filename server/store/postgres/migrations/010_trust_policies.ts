/**
 * Migration 10: the token exchange's tables, and what its audit entries record.
 *
 * - `automation_runtime_trust_policies`: one row per trust policy, by name; the policy as JSON
 *   beside its id (a policy deleted and created again under its name gets another id).
 * - `automation_runtime_exchanged_tokens`: one row per exchanged ID token, keyed by the digest of
 *   its issuer and `jti` (the token is never stored), kept until it expires; the primary key makes
 *   a second exchange of one token, on any replica, fail.
 * - The audit log gains `trust_policy` (the policy concerned) and `token` (an exchange's issuer,
 *   subject, `jti` and matched claims).
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Adds the trust policy and exchanged token tables and the audit columns.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration010 } from "./010_trust_policies.ts";
 * assert.equal(migration010.name, "trust_policies");
 * ```
 */
export const migration010: Migration = Object.freeze({
  version: 10,
  name: "trust_policies",
  sql: `
CREATE TABLE automation_runtime_trust_policies (
  namespace  text  NOT NULL,
  name       text  NOT NULL,
  policy_id  text  NOT NULL,
  record     jsonb NOT NULL,
  CONSTRAINT automation_runtime_trust_policies_pkey PRIMARY KEY (namespace, name)
);

CREATE TABLE automation_runtime_exchanged_tokens (
  namespace    text   NOT NULL,
  token_digest text   NOT NULL,
  principal_id text   NOT NULL,
  expires_at   bigint NOT NULL,
  CONSTRAINT automation_runtime_exchanged_tokens_pkey PRIMARY KEY (namespace, token_digest)
);

CREATE INDEX automation_runtime_exchanged_tokens_expiry
  ON automation_runtime_exchanged_tokens (namespace, expires_at);

ALTER TABLE automation_runtime_audit
  ADD COLUMN trust_policy text,
  ADD COLUMN token jsonb;
`,
});
