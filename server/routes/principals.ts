/**
 * Scoped principals: `POST /v1/principals` issues one with a one-time bearer,
 * `DELETE /v1/principals/{id}` revokes it, `GET /v1/principals` lists them a page at a time. All
 * need `authority:admin`.
 *
 * A revocation answers 204 only once it holds on every process sharing the store: after the
 * revoking write, it waits until every process's authority lease has acknowledged the new epoch
 * or lapsed (`Authenticator.settle`); when the request's deadline comes first it answers 408
 * `deadlineExceeded` (the revocation is recorded; asking again answers 204 once it holds).
 * Before that, the principal's sessions that wait for their first turn give their active-run
 * slots back (`runs/idle_slots.ts`).
 *
 * Paging: `GET /v1/principals?limit=N&cursor=C`. `limit` is 1 to 500 (default 100); the answer is
 * `{ principals: [...], nextCursor }`, `nextCursor` an opaque string to pass back as `cursor`, or
 * null after the last page. A bad `limit` or `cursor` (or any other query parameter) is 422
 * `invalidRequest`.
 *
 * Issuance itself (the record, its bearer, the answer and its replay) is `issuance.ts`'s, shared
 * with the token exchange: a bearer is never stored, and the recorded idempotent answer of a 201
 * leaves the bearer out; a replay derives it again, so the caller gets the identical body.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { toBase64Url } from "../digest.ts";
import { InterfaceError } from "../errors.ts";
import {
  capabilityGrantProblems,
  issuedAnswer,
  labelsOf,
  MAX_PRINCIPAL_TTL_MS,
  newPrincipal,
  replayIssued,
} from "../issuance.ts";
import type { RouteDefinition } from "../router.ts";
import { deadlineExceeded } from "../rules/deadline.ts";
import { invalidRequest, type ValidationDetail } from "../rules/json.ts";
import { type LazyBodySchema, lazyBodySchema } from "../schemas/lazy.ts";
import type { RuntimeServices } from "../services.ts";
import type { CreatePrincipalResult, PrincipalPosition } from "../store/types.ts";
import { type CreatePrincipalBody, PRINCIPAL_ID_PATTERN } from "../../wire/mod.ts";
import { parseRfc3339 } from "../time.ts";
import { auditEntry } from "../runs/audit.ts";
import { grantRunPolicy, policyAnswer, runPolicyOf } from "../runs/policy.ts";
import { spendStates } from "../runs/spend.ts";
import { releaseIdleSlots } from "../runs/idle_slots.ts";

export { derivePrincipalBearer, MAX_PRINCIPAL_TTL_MS } from "../issuance.ts";

/** Principals in one page of `GET /v1/principals` unless `limit` says otherwise. */
export const DEFAULT_PAGE_SIZE = 100;
/** Most principals in one page of `GET /v1/principals`. */
export const MAX_PAGE_SIZE = 500;

/**
 * Body schema of {@linkcode CreatePrincipalBody} (`createPrincipalBody` in
 * `server/schemas/principals.ts`): the shape only; the authority rules come after. Loaded with
 * zod on the first body, so that the service does not load zod at startup.
 */
export const createPrincipalSchema: LazyBodySchema = lazyBodySchema(async () =>
  (await import("../schemas/principals.ts")).createPrincipalBody
);

function checkGrant(
  body: CreatePrincipalBody,
  caller: NonNullable<RequestContext["principal"]>,
  now: number,
): ValidationDetail[] {
  const details = capabilityGrantProblems(body.capabilities, caller.capabilities);
  const expiresAt = parseRfc3339(body.expiresAt)!;
  if (expiresAt <= now) {
    details.push({ path: "expiresAt", message: "Must be in the future" });
  } else if (expiresAt - now > MAX_PRINCIPAL_TTL_MS) {
    details.push({ path: "expiresAt", message: "Must be at most 90 days ahead" });
  }
  if (expiresAt > caller.expiresAtMs) {
    details.push({ path: "expiresAt", message: "Must not be after the caller's own expiry" });
  }
  return details;
}

function principalExists(): InterfaceError {
  return new InterfaceError("principalExists", "A principal with this id already exists");
}

function principalNotFound(): InterfaceError {
  return new InterfaceError("notFound", "No principal with this id", { layer: "authority" });
}

function badQuery(path: string, message: string): InterfaceError {
  return invalidRequest([{ path, message }]);
}

/** Parses `limit` and `cursor` of a list query (the query string with its `?`, or ""). */
function parsePageQuery(query: string): { limit: number; after?: PrincipalPosition } {
  const params = new URLSearchParams(query);
  let limit = DEFAULT_PAGE_SIZE;
  let after: PrincipalPosition | undefined;
  const seen = new Set<string>();
  for (const [name, value] of params) {
    if (seen.has(name)) throw badQuery(name, "Must be given at most once");
    seen.add(name);
    if (name === "limit") {
      limit = /^[0-9]{1,3}$/.test(value) ? Number(value) : NaN;
      if (!(limit >= 1 && limit <= MAX_PAGE_SIZE)) {
        throw badQuery("limit", `Must be an integer from 1 to ${MAX_PAGE_SIZE}`);
      }
    } else if (name === "cursor") {
      after = decodeCursor(value) ?? undefined;
      if (after === undefined) throw badQuery("cursor", "Must be a nextCursor of an earlier page");
    } else {
      throw badQuery(name, "Unknown query parameter (known: limit, cursor)");
    }
  }
  return after === undefined ? { limit } : { limit, after };
}

/** The opaque cursor: base64url of the JSON pair `[createdAt, principalId]`. */
function encodeCursor(position: PrincipalPosition): string {
  return toBase64Url(new TextEncoder().encode(
    JSON.stringify([position.createdAt, position.principalId]),
  ));
}

function decodeCursor(cursor: string): PrincipalPosition | null {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) return null;
  try {
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    const pair = JSON.parse(binary);
    if (
      !Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== "string" ||
      parseRfc3339(pair[0]) === null || typeof pair[1] !== "string" ||
      !PRINCIPAL_ID_PATTERN.test(pair[1])
    ) {
      return null;
    }
    return { createdAt: pair[0], principalId: pair[1] };
  } catch {
    return null;
  }
}

/**
 * The principal routes.
 */
export function principalRoutes(services: RuntimeServices): RouteDefinition[] {
  const { bootstrap, store, authenticator } = services;

  async function create(context: RequestContext): Promise<Response> {
    const caller = context.principal!;
    const body = context.body as CreatePrincipalBody;
    const now = context.receivedAt;
    const details = checkGrant(body, caller, now);
    const policy = grantRunPolicy(body, runPolicyOf(caller));
    if (Array.isArray(policy)) details.push(...policy);
    if (details.length > 0 || Array.isArray(policy)) {
      throw invalidRequest(details, { layer: "authority" });
    }
    if (body.principalId === bootstrap.principalId) throw principalExists();
    const { record, bearer, principal: publicBody } = newPrincipal(bootstrap.authorityKey, {
      principalId: body.principalId,
      capabilities: body.capabilities,
      expiresAt: parseRfc3339(body.expiresAt)!,
      issuerId: caller.principalId,
      now,
      policy,
      labels: body,
    });
    const key = context.idempotency;
    // Written with the principal, in the same atomic step: an issuance is never unaudited.
    const issued = auditEntry(context, {
      action: "principal.issued",
      subjectId: body.principalId,
      ...(body.name !== undefined ? { subjectName: body.name } : {}),
      outcome: "ok",
    });
    let result: CreatePrincipalResult;
    if (key === null) {
      result = await store.principals.create(record, undefined, issued);
    } else if (key.token === null) {
      // One atomic write: the principal, its digest index and the recorded answer.
      const outcome = await store.principals.create(record, {
        scope: key.scope,
        requestDigest: key.requestDigest,
        now,
        response: { status: 201, body: JSON.stringify(publicBody) },
        expiresAt: key.expiresAt,
      }, issued);
      if (typeof outcome !== "string") return await key.used(outcome);
      result = outcome;
    } else {
      result = await store.principals.create(record, {
        scope: key.scope,
        token: key.token,
        response: { status: 201, body: JSON.stringify(publicBody) },
        expiresAt: key.expiresAt,
      }, issued);
    }
    if (result === "exists") throw principalExists();
    key?.recorded();
    return issuedAnswer(context, publicBody, bearer);
  }

  async function revoke(context: RequestContext): Promise<Response> {
    const principalId = context.params.principalId;
    if (!PRINCIPAL_ID_PATTERN.test(principalId)) throw principalNotFound();
    if (principalId === bootstrap.principalId) {
      throw invalidRequest([{
        path: "principalId",
        message:
          "The bootstrap principal cannot be revoked; rotate its bearer with `init --rotate`",
      }], { layer: "authority" });
    }
    // The name is read first for the audit entry: it never changes, so no race can make it
    // stale. An unknown id is answered here, without a write.
    const subject = await store.principals.get(principalId);
    if (subject === null) throw principalNotFound();
    // Written with the revocation, in the same atomic step: a revocation is never unaudited.
    const revoked = auditEntry(context, {
      action: "principal.revoked",
      subjectId: principalId,
      ...(subject.name !== undefined ? { subjectName: subject.name } : {}),
      outcome: "ok",
    });
    const result = await store.principals.revoke(
      principalId,
      new Date(context.receivedAt).toISOString(),
      revoked,
    );
    authenticator.forget(principalId);
    if (result === "notFound") throw principalNotFound();
    // Its idle sessions give their active-run slots back (also after "alreadyRevoked": a
    // release the first revocation did not finish is finished here).
    await releaseIdleSlots(store, { principalId, now: context.receivedAt });
    // Also after "alreadyRevoked": the revocation that got there first may still be waiting.
    const deadline = context.deadline > 0 ? context.deadline : undefined;
    if (!await authenticator.settle({ deadline })) throw deadlineExceeded();
    return context.json(null, 204);
  }

  async function list(context: RequestContext): Promise<Response> {
    const { limit, after } = parsePageQuery(context.query);
    const page = await store.principals.page({ limit, after });
    const spent = await spendStates(
      store.spend,
      page.records.map((record) => ({
        principalId: record.principalId,
        limits: runPolicyOf(record).spend,
      })),
      context.receivedAt,
    );
    const principals = page.records.map((record, index) => {
      const entry: Record<string, unknown> = {
        principalId: record.principalId,
        ...labelsOf(record),
        capabilities: record.capabilities,
        expiresAt: record.expiresAt,
        issuerId: record.issuerId,
        createdAt: record.createdAt,
      };
      Object.assign(entry, policyAnswer(runPolicyOf(record)));
      if (record.revokedAt !== null) entry.revokedAt = record.revokedAt;
      if (spent[index] !== undefined) entry.spend = spent[index];
      return entry;
    });
    const nextCursor = page.next === null ? null : encodeCursor(page.next);
    return context.json(JSON.stringify({ principals, nextCursor }));
  }

  return [
    {
      method: "POST",
      path: "/v1/principals",
      kind: "shared",
      capability: "authority:admin",
      idempotent: true,
      idempotency: "atomic",
      body: createPrincipalSchema,
      handle: create,
      replay: replayIssued(store, bootstrap),
    },
    {
      method: "GET",
      path: "/v1/principals",
      kind: "shared",
      capability: "authority:admin",
      handle: list,
    },
    {
      method: "DELETE",
      path: "/v1/principals/:principalId",
      kind: "shared",
      capability: "authority:admin",
      handle: revoke,
    },
  ];
}
