/**
 * Trust policies, all `authority:admin`: `POST /v1/trust-policies` creates one (idempotent),
 * `GET /v1/trust-policies` lists them a page at a time by name, `DELETE
 * /v1/trust-policies/{name}` deletes one: from its 204 on, no exchange under it issues anything
 * on any replica (principals it issued keep their short expiry).
 *
 * A policy is never wider than the admin that made it, by the rules of issuance: its
 * capabilities a subset of the creator's and never `authority:admin`, its run policy within the
 * creator's. Its issuer must be an `https:` URL in canonical form (a loopback `http:` one only
 * with `serve --oidc-allow-loopback-http true`). Creation and deletion are audited
 * (`trustPolicy.created`, `trustPolicy.deleted`) in the same atomic step as their effect.
 *
 * Paging: `limit` 1 to 500 (default 100), `cursor` the `nextCursor` of the previous page (an
 * opaque string); anything malformed is 422 `invalidRequest`.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { InterfaceError, invalidRequest, type ValidationDetail } from "../errors.ts";
import { capabilityGrantProblems } from "../issuance.ts";
import { issuerUrlProblem } from "../oidc/issuer_url.ts";
import type { RouteDefinition } from "../router.ts";
import { type LazyBodySchema, lazyBodySchema } from "../schemas/lazy.ts";
import type { RuntimeServices } from "../services.ts";
import { decodeCursor, encodeCursor, type TrustPolicyRecord } from "../store/types.ts";
import { type CreateTrustPolicyBody, TRUST_POLICY_NAME, type TrustPolicy } from "../../wire/mod.ts";
import { auditEntry } from "../runs/audit.ts";
import { grantRunPolicy, policyAnswer, runPolicyOf } from "../runs/policy.ts";
import { parseListQuery } from "./runs.ts";

/** Policies in one page of `GET /v1/trust-policies` unless `limit` says otherwise. */
export const DEFAULT_TRUST_POLICY_PAGE = 100;
/** Most policies in one page of `GET /v1/trust-policies`. */
export const MAX_TRUST_POLICY_PAGE = 500;

/**
 * Body schema of {@linkcode CreateTrustPolicyBody} (`createTrustPolicyBody` in
 * `server/schemas/trust_policies.ts`), loaded with zod on the first body.
 */
export const createTrustPolicySchema: LazyBodySchema = lazyBodySchema(async () =>
  (await import("../schemas/trust_policies.ts")).createTrustPolicyBody
);

/**
 * A policy as the service describes it: the stored record without its id.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publicTrustPolicy } from "./trust_policies.ts";
 * const policy = publicTrustPolicy({
 *   name: "ci",
 *   policyId: "x",
 *   issuer: "https://token.actions.githubusercontent.com",
 *   audience: "automation-runtime",
 *   claims: { repository: "octo/app" },
 *   capabilities: ["session:read"],
 *   maxActiveRuns: 8,
 *   ttlSeconds: 900,
 *   creatorId: "c",
 *   createdAt: "2026-07-23T00:00:00.000Z",
 * });
 * assert.equal("policyId" in policy, false);
 * ```
 */
export function publicTrustPolicy(record: TrustPolicyRecord): TrustPolicy {
  const { policyId: _policyId, ...policy } = record;
  return policy;
}

function notFound(): InterfaceError {
  return new InterfaceError("notFound", "No trust policy has this name", { layer: "authority" });
}

/** The trust policy routes. */
export function trustPolicyRoutes(
  services: RuntimeServices,
  options: { allowLoopbackHttp: boolean },
): RouteDefinition[] {
  const { store } = services;

  async function create(context: RequestContext): Promise<Response> {
    const caller = context.principal!;
    const body = context.body as CreateTrustPolicyBody;
    const details: ValidationDetail[] = [];
    const issuer = issuerUrlProblem(body.issuer, options);
    if (issuer !== null) details.push({ path: "issuer", message: issuer });
    details.push(...capabilityGrantProblems(body.capabilities, caller.capabilities));
    const granted = grantRunPolicy(body, runPolicyOf(caller));
    if (Array.isArray(granted)) details.push(...granted);
    if (details.length > 0 || Array.isArray(granted)) {
      throw invalidRequest(details, { layer: "authority" });
    }
    const record: TrustPolicyRecord = {
      name: body.name,
      issuer: body.issuer,
      audience: body.audience,
      claims: body.claims,
      capabilities: body.capabilities,
      // The principal policy its exchanges grant, as issuance stores it: each limiting list.
      ...policyAnswer(granted),
      maxActiveRuns: granted.maxActiveRuns,
      ttlSeconds: body.ttlSeconds,
      creatorId: caller.principalId,
      createdAt: new Date(context.receivedAt).toISOString(),
      policyId: crypto.randomUUID(),
    };
    const created = await store.trustPolicies.create(
      record,
      auditEntry(context, { action: "trustPolicy.created", trustPolicy: body.name, outcome: "ok" }),
    );
    if (created === "exists") {
      throw new InterfaceError("trustPolicyExists", "A trust policy with this name exists");
    }
    return context.json(JSON.stringify(publicTrustPolicy(record)), 201);
  }

  async function list(context: RequestContext): Promise<Response> {
    const { limit, values } = parseListQuery(context.query, {
      names: [],
      max: MAX_TRUST_POLICY_PAGE,
      fallback: DEFAULT_TRUST_POLICY_PAGE,
    });
    let after: string | undefined;
    if (values.cursor !== undefined) {
      const decoded = decodeCursor(values.cursor);
      const name = decoded?.length === 1 ? decoded[0] : null;
      if (typeof name !== "string" || !TRUST_POLICY_NAME.test(name)) {
        throw invalidRequest([{
          path: "cursor",
          message: "Must be a nextCursor of an earlier page",
        }]);
      }
      after = name;
    }
    const page = await store.trustPolicies.page({ limit, after });
    return context.json(JSON.stringify({
      trustPolicies: page.records.map(publicTrustPolicy),
      nextCursor: page.next === null ? null : encodeCursor([page.next]),
    }));
  }

  async function remove(context: RequestContext): Promise<Response> {
    const name = context.params.name;
    if (!TRUST_POLICY_NAME.test(name)) throw notFound();
    const deleted = await store.trustPolicies.delete(
      name,
      auditEntry(context, { action: "trustPolicy.deleted", trustPolicy: name, outcome: "ok" }),
    );
    if (deleted === "notFound") throw notFound();
    return context.json(null, 204);
  }

  return [
    {
      method: "POST",
      path: "/v1/trust-policies",
      kind: "shared",
      capability: "authority:admin",
      idempotent: true,
      body: createTrustPolicySchema,
      handle: create,
    },
    {
      method: "GET",
      path: "/v1/trust-policies",
      kind: "shared",
      capability: "authority:admin",
      handle: list,
    },
    {
      method: "DELETE",
      path: "/v1/trust-policies/:name",
      kind: "shared",
      capability: "authority:admin",
      handle: remove,
    },
  ];
}
