/**
 * Issuing a principal, the one way every route does it: `POST /v1/principals` (an admin issues)
 * and `POST /v1/token-exchange` (a trust policy issues for a CI job), with the rule trust
 * policies share with them, that nothing granted is wider than its grantor.
 *
 * - The grant rules: {@linkcode capabilityGrantProblems} (never `authority:admin`, a subset of
 *   the grantor's capabilities); the run policy's subset rules are `runs/policy.ts`'s.
 * - The record and its bearer: {@linkcode newPrincipal}. A bearer is never stored: it is derived
 *   as HMAC-SHA256(bootstrap authority key, principal id and a stored random nonce)
 *   ({@linkcode derivePrincipalBearer}), and only its SHA-256 digest is kept.
 * - The answer: {@linkcode issuedAnswer}, the public principal with its one-time bearer, never
 *   cached. The recorded idempotent answer leaves the bearer out; {@linkcode replayIssued}
 *   derives it again, so a replay gets the identical body.
 *
 * @module
 */
import { hmacSha256, sha256Hex, toBase64Url } from "./digest.ts";
import type { RequestContext } from "./context.ts";
import type { ValidationDetail } from "./errors.ts";
import type { BootstrapCredential } from "./bootstrap/credential.ts";
import { policyAnswer, type RunPolicy } from "./runs/policy.ts";
import type { Capability, PrincipalRecord, Store, StoredResponse } from "./store/types.ts";
import type { IssuedPrincipal, RuntimePrincipal } from "../wire/mod.ts";

/** Longest lifetime of an issued principal: 90 days, in ms. */
export const MAX_PRINCIPAL_TTL_MS = 90 * 86_400_000;

/** Responses that carry a bearer must not be cached. */
const NO_STORE = { "cache-control": "no-store" };

const NONCE_BYTES = new Uint8Array(16);
const MAC = new Uint8Array(32);

/**
 * Derives the bearer of a principal from the bootstrap authority key and its nonce:
 * `art_` + base64url(HMAC-SHA256(key, principal id, nonce)), 32 bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { derivePrincipalBearer } from "./issuance.ts";
 * const key = crypto.getRandomValues(new Uint8Array(32));
 * const bearer = derivePrincipalBearer(key, crypto.randomUUID(), "nonce");
 * assert.equal(bearer.startsWith("art_"), true);
 * assert.equal(bearer.length, 47);
 * ```
 */
export function derivePrincipalBearer(
  authorityKey: Uint8Array,
  principalId: string,
  nonce: string,
): string {
  const mac = toBase64Url(
    hmacSha256(
      authorityKey,
      `automation-runtime/principal-bearer/v1\n${principalId}\n${nonce}`,
      MAC,
    ),
  );
  return `art_${mac}`;
}

/**
 * Why `requested` cannot be granted by a grantor holding `held`: `authority:admin` is never
 * granted, and nothing the grantor lacks. Each problem is reported at `path`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { capabilityGrantProblems } from "./issuance.ts";
 * assert.deepEqual(capabilityGrantProblems(["session:read"], ["session:read"]), []);
 * assert.equal(capabilityGrantProblems(["authority:admin"], ["authority:admin"]).length, 1);
 * assert.match(
 *   capabilityGrantProblems(["session:write"], ["session:read"])[0].message,
 *   /not held: session:write/,
 * );
 * ```
 */
export function capabilityGrantProblems(
  requested: readonly Capability[],
  held: readonly Capability[],
  path = "capabilities",
): ValidationDetail[] {
  const details: ValidationDetail[] = [];
  if (requested.includes("authority:admin")) {
    details.push({ path, message: "Must not include authority:admin" });
  }
  const missing = requested.filter((name) => !held.includes(name));
  if (missing.length > 0) {
    details.push({
      path,
      message: `Must be a subset of the caller's capabilities; not held: ${missing.join(", ")}`,
    });
  }
  return details;
}

/** A principal's labels for people: its name and metadata. */
export interface PrincipalLabels {
  /** Its name. */
  name?: string;
  /** Its metadata pairs. */
  metadata?: Readonly<Record<string, string>>;
}

/**
 * A principal's name and metadata, where it has them, for a record or an answer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { labelsOf } from "./issuance.ts";
 * assert.deepEqual(labelsOf({ name: "ci" }), { name: "ci" });
 * assert.deepEqual(labelsOf({}), {});
 * ```
 */
export function labelsOf(
  source: PrincipalLabels,
): { name?: string; metadata?: Record<string, string> } {
  return {
    ...(source.name !== undefined ? { name: source.name } : {}),
    ...(source.metadata !== undefined ? { metadata: { ...source.metadata } } : {}),
  };
}

/** What a new principal is made of. */
export interface NewPrincipal {
  /** Its lower-case UUID. */
  principalId: string;
  /** What it may do. */
  capabilities: readonly Capability[];
  /** Its expiry, ms since the epoch. */
  expiresAt: number;
  /** The principal that issued it. */
  issuerId: string;
  /** When it is created, ms since the epoch. */
  now: number;
  /** Its run policy, as granted. */
  policy: RunPolicy;
  /** Its name and metadata, when it has them. */
  labels?: PrincipalLabels;
}

/** A new principal: its record to store, its one-time bearer and its public form. */
export interface IssuedRecord {
  /** The record (with the bearer's digest, never the bearer). */
  record: PrincipalRecord;
  /** The bearer, for the one answer that shows it. */
  bearer: string;
  /** The principal as the answer describes it, without the bearer (what is recorded). */
  principal: RuntimePrincipal;
}

/**
 * Builds a new principal: a fresh nonce, the bearer derived from it, the record holding its
 * digest, and the public form. Times are stored and answered in one canonical form (UTC with
 * milliseconds).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { newPrincipal } from "./issuance.ts";
 * import { runPolicyOf } from "./runs/policy.ts";
 * const issued = newPrincipal(crypto.getRandomValues(new Uint8Array(32)), {
 *   principalId: crypto.randomUUID(),
 *   capabilities: ["session:read"],
 *   expiresAt: Date.UTC(2030, 0, 1),
 *   issuerId: crypto.randomUUID(),
 *   now: Date.UTC(2029, 0, 1),
 *   policy: runPolicyOf({ agentIds: ["agent_1"] }),
 *   labels: { name: "nightly" },
 * });
 * assert.equal(issued.principal.expiresAt, "2030-01-01T00:00:00.000Z");
 * assert.deepEqual(issued.principal.agentIds, ["agent_1"]);
 * assert.equal(issued.record.name, "nightly");
 * assert.notEqual(issued.record.bearerDigest, issued.bearer);
 * assert.equal("bearer" in issued.principal, false);
 * ```
 */
export function newPrincipal(authorityKey: Uint8Array, fields: NewPrincipal): IssuedRecord {
  const nonce = toBase64Url(crypto.getRandomValues(NONCE_BYTES));
  const bearer = derivePrincipalBearer(authorityKey, fields.principalId, nonce);
  const expiresAt = new Date(fields.expiresAt).toISOString();
  // The policy is stored as it is answered: each list that limits the principal, its limit.
  const granted = policyAnswer(fields.policy);
  const labels = labelsOf(fields.labels ?? {});
  const record: PrincipalRecord = {
    principalId: fields.principalId,
    bearerDigest: sha256Hex(bearer),
    capabilities: fields.capabilities,
    expiresAt,
    issuerId: fields.issuerId,
    createdAt: new Date(fields.now).toISOString(),
    revokedAt: null,
    nonce,
    ...granted,
    ...labels,
  };
  const principal: RuntimePrincipal = {
    principalId: fields.principalId,
    ...labels,
    capabilities: [...fields.capabilities],
    expiresAt,
    ...granted,
  };
  return { record, bearer, principal };
}

/**
 * The 201 answer of an issuance: the public principal and its one-time bearer, never cached.
 *
 * @example
 * ```ts ignore
 * return issuedAnswer(context, issued.principal, issued.bearer);
 * ```
 */
export function issuedAnswer(
  context: RequestContext,
  principal: RuntimePrincipal,
  bearer: string,
): Response {
  const body: IssuedPrincipal = { ...principal, bearer };
  return context.json(JSON.stringify(body), 201, NO_STORE);
}

/**
 * The replay of a recorded issuance answer: a 201 gets its bearer derived again from the stored
 * principal's nonce (the recording left it out), anything else is answered as recorded.
 *
 * @example
 * ```ts ignore
 * const route = { …, replay: replayIssued(store, bootstrap) };
 * ```
 */
export function replayIssued(
  store: Store,
  bootstrap: Pick<BootstrapCredential, "authorityKey">,
): (stored: StoredResponse, context: RequestContext) => Promise<Response> {
  return async (stored, context) => {
    if (stored.status !== 201) return context.json(stored.body, stored.status);
    const principal = JSON.parse(stored.body) as RuntimePrincipal;
    const record = await store.principals.get(principal.principalId);
    if (record === null) throw new Error("Recorded principal is missing from the store");
    const bearer = derivePrincipalBearer(bootstrap.authorityKey, record.principalId, record.nonce);
    return issuedAnswer(context, principal, bearer);
  };
}
