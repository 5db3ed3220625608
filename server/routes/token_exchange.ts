/**
 * `POST /v1/token-exchange`: a CI job trades its OIDC ID token for a short-lived principal under
 * a trust policy, with no stored secret (RFC 8693 style body, see `wire/trust_policies.ts`). The
 * one `/v1` route without a bearer: every other shared rule runs (interface version, correlation
 * id, deadline, the in-flight quota shared by every anonymous request, the idempotency key, a
 * 32 KiB body limit, the body schema), then the exchange's own rate limits and checks
 * (`oidc/exchange.ts`).
 *
 * The answer is a principal exactly as `POST /v1/principals` answers it (`issuance.ts`): 201, the
 * public principal and its one-time bearer, a replay of the same key and body deriving the same
 * bearer again. The principal is issued by the policy's creator; it is created in ONE atomic step
 * with the token's use (its `jti`, once across replicas), the recorded answer and the
 * `token.exchanged` audit entry (the token's issuer, subject, `jti` and matched claims, never the
 * token), checked against the policy as read, so a policy deleted meanwhile issues nothing.
 *
 * Its body must arrive within 10 s ({@linkcode EXCHANGE_BODY_MS}) and the request's deadline,
 * else 408 `deadlineExceeded`: the in-flight quota is shared by every anonymous caller.
 *
 * Refusals: 401 `authenticationFailed` with `details.reason` (`TOKEN_EXCHANGE_REFUSALS`), 403
 * `policyMismatch` with `details.claim`, 429 `resourceExhausted` with `Retry-After`, 408
 * `deadlineExceeded` when the issuer's keys do not arrive before the request's deadline.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { issuedAnswer, newPrincipal, replayIssued } from "../issuance.ts";
import type {
  ExchangeDecision,
  exchangeRefused,
  TokenExchange,
  TokenExchangeOptions,
} from "../oidc/exchange.ts";
import type { RouteDefinition } from "../router.ts";
import { deadlineExceeded } from "../rules/deadline.ts";
import { type LazyBodySchema, lazyBodySchema } from "../schemas/lazy.ts";
import type { RuntimeServices } from "../services.ts";
import type { TokenExchangeBody } from "../../wire/mod.ts";
import { actorAuditEntry } from "../runs/audit.ts";
import { runPolicyOf } from "../runs/policy.ts";

/** The exchange, once loaded. */
interface LoadedExchange {
  readonly exchange: TokenExchange;
  readonly exchangeRefused: typeof exchangeRefused;
}

/** The body limit of the exchange: an ID token is at most 16 KiB. */
export const MAX_EXCHANGE_BODY_BYTES = 32_768;

/**
 * How long the exchange's body may take to arrive, in ms (10 s, as for the webhook intake): every
 * anonymous request shares one in-flight quota, and a client trickling its body must not hold a
 * slot of it until a deadline of up to 300 s.
 */
export const EXCHANGE_BODY_MS = 10_000;

/** Body schema of {@linkcode TokenExchangeBody}, loaded with zod on the first body. */
export const tokenExchangeSchema: LazyBodySchema = lazyBodySchema(async () =>
  (await import("../schemas/trust_policies.ts")).tokenExchangeBody
);

/** The token exchange route. */
export function tokenExchangeRoutes(
  services: RuntimeServices,
  options: TokenExchangeOptions = {},
): RouteDefinition[] {
  const { store, bootstrap, now } = services;
  // The exchange (with the OIDC verification core) is loaded by the first exchange, so a server
  // that never sees one does not load it at startup.
  let loaded: Promise<LoadedExchange> | null = null;
  function exchanger(): Promise<LoadedExchange> {
    loaded ??= import("../oidc/exchange.ts").then((module) => ({
      exchange: new module.TokenExchange({ ...options, store, bootstrap, now }),
      exchangeRefused: module.exchangeRefused,
    }));
    return loaded;
  }

  /** The decision, given until the request's deadline. */
  async function decide(context: RequestContext): Promise<ExchangeDecision> {
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(deadlineExceeded()),
      Math.max(context.deadline - context.receivedAt, 0),
    );
    try {
      const { exchange } = await exchanger();
      return await exchange.decide(context.body as TokenExchangeBody, controller.signal);
    } finally {
      clearTimeout(timer);
    }
  }

  async function handle(context: RequestContext): Promise<Response> {
    const decision = await decide(context);
    const { policy, token } = decision;
    const principalId = crypto.randomUUID();
    const { record, bearer, principal } = newPrincipal(bootstrap.authorityKey, {
      principalId,
      capabilities: policy.capabilities,
      expiresAt: decision.expiresAt,
      issuerId: policy.creatorId,
      now: context.receivedAt,
      policy: runPolicyOf(policy),
      labels: { name: decision.name },
    });
    const key = context.idempotency!;
    const result = await store.trustPolicies.exchange(
      record,
      decision.use,
      {
        scope: key.scope,
        requestDigest: key.requestDigest,
        now: context.receivedAt,
        response: { status: 201, body: JSON.stringify(principal) },
        expiresAt: key.expiresAt,
      },
      actorAuditEntry(context, principalId, {
        action: "token.exchanged",
        subjectId: principalId,
        subjectName: decision.name,
        trustPolicy: policy.name,
        token: {
          issuer: token.issuer,
          subject: token.subject,
          jwtId: token.jwtId,
          claims: { ...decision.matched },
        },
        outcome: "ok",
      }),
    );
    const { exchangeRefused } = await exchanger();
    switch (result) {
      case "created":
        key.recorded();
        return issuedAnswer(context, principal, bearer);
      case "replayed":
        throw exchangeRefused("replayed", "This ID token was exchanged already");
      case "policyGone":
        throw exchangeRefused("unknownPolicy", "No trust policy has this name");
      case "exists":
        // A random UUID met another principal's: nothing was written; the caller may retry.
        throw new Error("A fresh principal id was taken");
      default:
        return await key.used(result);
    }
  }

  return [{
    method: "POST",
    path: "/v1/token-exchange",
    kind: "shared",
    authentication: "none",
    idempotent: true,
    idempotency: "atomic",
    body: tokenExchangeSchema,
    maxBodyBytes: MAX_EXCHANGE_BODY_BYTES,
    maxBodyMs: options.bodyTimeoutMs ?? EXCHANGE_BODY_MS,
    handle,
    replay: replayIssued(store, bootstrap),
  }];
}
