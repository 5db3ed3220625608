/**
 * `client.trustPolicies`: the trust policies that let CI jobs exchange their OIDC ID tokens for
 * principals (`/v1/trust-policies`, `authority:admin`). Creation sends an idempotency key (yours,
 * or one per call kept across its retries); reads are retried like every read. Web standards
 * only.
 *
 * @module
 */
import type {
  CreateTrustPolicyBody,
  TrustPolicy,
  TrustPolicyPage,
  TrustPolicyPageParams,
} from "../wire/mod.ts";
import { TRUST_POLICY_NAME } from "../wire/mod.ts";
import {
  checkedCursor,
  checkedLimit,
  idempotencyKeyOf,
  invalidAnswer,
  isObject,
  queryOf,
  type SendRequest,
} from "./_request.ts";
import type { CallOptions, MutatingCallOptions } from "./types.ts";

function checkName(name: string): string {
  if (typeof name !== "string" || !TRUST_POLICY_NAME.test(name)) {
    throw new TypeError(
      "A trust policy name is 1 to 64 letters, digits, '.', '_' or '-', " +
        "starting with a letter or digit",
    );
  }
  return name;
}

/**
 * The trust policies, as `client.trustPolicies` of a `RuntimeServiceClient`. Failures reject
 * with `RuntimeServiceError` (403 `missingCapability` without `authority:admin`, 409
 * `trustPolicyExists`, 422 `invalidRequest` for a policy wider than the caller).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuntimeServiceClient } from "./client.ts";
 * const calls: string[] = [];
 * const client = new RuntimeServiceClient({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: "art_" + "x".repeat(43),
 *   fetch: async (input, init) => {
 *     const request = new Request(input, init);
 *     calls.push(`${request.method} ${new URL(request.url).pathname}`);
 *     if (request.method === "DELETE") return new Response(null, { status: 204 });
 *     const body = await request.json();
 *     return Response.json({ ...body, maxActiveRuns: 8, creatorId: "c", createdAt: "t" }, {
 *       status: 201,
 *     });
 *   },
 * });
 * const policy = await client.trustPolicies.create({
 *   name: "octo-repo-main",
 *   issuer: "https://token.actions.githubusercontent.com",
 *   audience: "automation-runtime",
 *   claims: { repository: "octo-org/octo-repo", ref: "refs/heads/main" },
 *   capabilities: ["session:read", "session:write"],
 *   ttlSeconds: 900,
 * });
 * assert.equal(policy.maxActiveRuns, 8);
 * await client.trustPolicies.delete("octo-repo-main");
 * assert.deepEqual(calls, [
 *   "POST /v1/trust-policies",
 *   "DELETE /v1/trust-policies/octo-repo-main",
 * ]);
 * ```
 */
export class TrustPoliciesApi {
  readonly #send: SendRequest;

  /**
   * Binds the group to a client's request function; reach it as `client.trustPolicies`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * import { TrustPoliciesApi } from "./trust_policies.ts";
   * const client = new RuntimeServiceClient({ baseUrl: "http://127.0.0.1:7777", token: "art_x" });
   * assert.ok(client.trustPolicies instanceof TrustPoliciesApi);
   * ```
   */
  constructor(send: SendRequest) {
    this.#send = send;
  }

  /**
   * Creates a trust policy (`POST /v1/trust-policies`): never wider than the caller, an `https`
   * issuer, `ttlSeconds` at most 3,600.
   */
  async create(
    body: CreateTrustPolicyBody,
    options: MutatingCallOptions = {},
  ): Promise<TrustPolicy> {
    if (!isObject(body)) throw new TypeError("create needs a trust policy body");
    checkName(body.name);
    const answer = await this.#send({
      method: "POST",
      path: "/v1/trust-policies",
      body,
      authenticated: true,
      idempotencyKey: idempotencyKeyOf(options),
      options,
    });
    if (!isObject(answer.body) || typeof answer.body.name !== "string") {
      throw invalidAnswer(answer, "The trust policy answer has no name");
    }
    return answer.body as unknown as TrustPolicy;
  }

  /**
   * One page of trust policies, by name (`GET /v1/trust-policies`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * let query = "";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: (input) => {
   *     query = new URL(String(input)).search;
   *     return Promise.resolve(Response.json({ trustPolicies: [], nextCursor: null }));
   *   },
   * });
   * assert.deepEqual(await client.trustPolicies.page({ limit: 5 }), {
   *   trustPolicies: [],
   *   nextCursor: null,
   * });
   * assert.equal(query, "?limit=5");
   * ```
   */
  async page(
    params: TrustPolicyPageParams = {},
    options: CallOptions = {},
  ): Promise<TrustPolicyPage> {
    const limit = checkedLimit(params.limit, 500);
    const cursor = checkedCursor(params.cursor);
    const answer = await this.#send({
      method: "GET",
      path: `/v1/trust-policies${queryOf({ limit, cursor })}`,
      authenticated: true,
      options,
    });
    const body = answer.body;
    if (!isObject(body) || !Array.isArray(body.trustPolicies)) {
      throw invalidAnswer(answer, "The trust policy list answer has no trustPolicies array");
    }
    const next = body.nextCursor;
    return {
      trustPolicies: body.trustPolicies as TrustPolicy[],
      nextCursor: typeof next === "string" && next !== "" ? next : null,
    };
  }

  /** Every trust policy, by name: walks the pages of {@linkcode TrustPoliciesApi.page}. */
  async list(options: CallOptions = {}): Promise<TrustPolicy[]> {
    const policies: TrustPolicy[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.page({ cursor }, options);
      policies.push(...page.trustPolicies);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return policies;
  }

  /**
   * Deletes a trust policy (`DELETE /v1/trust-policies/{name}`): no exchange under it succeeds
   * from then on; principals it issued keep their expiry. An unknown name rejects with
   * `notFound`.
   */
  async delete(name: string, options: CallOptions = {}): Promise<void> {
    await this.#send({
      method: "DELETE",
      path: `/v1/trust-policies/${encodeURIComponent(checkName(name))}`,
      authenticated: true,
      options,
    });
  }
}
