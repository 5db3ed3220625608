/**
 * Migration 1: the principals and idempotency tables.
 *
 * Timestamps of principals are kept as the exact RFC 3339 text the server wrote, so a record reads
 * back byte for byte as it was stored. Idempotency times are milliseconds since the epoch, as the
 * store interface passes them. Every row carries the namespace derived from the bootstrap
 * credential, so rotating the bootstrap orphans old rows.
 *
 * @module
 */
import type { Migration } from "./mod.ts";

/**
 * Creates `automation_runtime_principals` and `automation_runtime_idempotency`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { migration001 } from "./001_initial.ts";
 * assert.equal(migration001.version, 1);
 * ```
 */
export const migration001: Migration = Object.freeze({
  version: 1,
  name: "initial",
  sql: `
CREATE TABLE automation_runtime_principals (
  namespace     text   NOT NULL,
  principal_id  text   NOT NULL,
  bearer_digest text   NOT NULL,
  capabilities  text[] NOT NULL,
  expires_at    text   NOT NULL,
  issuer_id     text   NOT NULL,
  created_at    text   NOT NULL,
  revoked_at    text,
  nonce         text   NOT NULL,
  CONSTRAINT automation_runtime_principals_pkey PRIMARY KEY (namespace, principal_id),
  CONSTRAINT automation_runtime_principals_digest_key UNIQUE (namespace, bearer_digest)
);

CREATE TABLE automation_runtime_idempotency (
  namespace       text    NOT NULL,
  scope           text    NOT NULL,
  request_digest  text    NOT NULL,
  token           text    NOT NULL,
  completed       boolean NOT NULL DEFAULT false,
  lease_until     bigint  NOT NULL,
  expires_at      bigint  NOT NULL,
  response_status integer,
  response_body   text,
  CONSTRAINT automation_runtime_idempotency_pkey PRIMARY KEY (namespace, scope),
  CONSTRAINT automation_runtime_idempotency_response_check
    CHECK (completed = (response_status IS NOT NULL AND response_body IS NOT NULL))
);

CREATE INDEX automation_runtime_idempotency_expiry
  ON automation_runtime_idempotency (namespace, expires_at);
`,
});
