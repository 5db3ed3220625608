/**
 * `client.audit`: the service's append-only audit log (`GET /v1/audit`, `authority:admin`).
 * Entries never hold a bearer, key, secret or message content. Reads are retried like every
 * read. Web standards only.
 *
 * @module
 */
import type { AuditEntry, AuditPage, ListAuditParams } from "../wire/mod.ts";
import {
  checkedCursor,
  idSegment,
  invalidAnswer,
  isObject,
  queryOf,
  type SendRequest,
} from "./_request.ts";
import type { CallOptions } from "./types.ts";

/**
 * The audit log, as `client.audit` of a `RuntimeServiceClient`. Failures reject with
 * `RuntimeServiceError` (403 `missingCapability` without `authority:admin`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RuntimeServiceClient } from "./client.ts";
 * let query = "";
 * const client = new RuntimeServiceClient({
 *   baseUrl: "http://127.0.0.1:7777",
 *   token: "art_" + "x".repeat(43),
 *   fetch: (input) => {
 *     query = new URL(String(input)).search;
 *     return Promise.resolve(Response.json({
 *       entries: [{
 *         seq: 7, at: "2026-07-23T10:00:00Z", action: "run.started", actorId: "p1",
 *         runId: "sesn_1", correlationId: "c1", outcome: "success",
 *       }],
 *       nextCursor: null,
 *     }));
 *   },
 * });
 * const page = await client.audit.list({ action: "run.started", limit: 10 });
 * assert.equal(page.entries[0].runId, "sesn_1");
 * assert.equal(query, "?limit=10&action=run.started");
 * ```
 */
export class AuditApi {
  readonly #send: SendRequest;

  /**
   * Binds the group to a client's request function; reach it as `client.audit`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { AuditApi } from "./audit.ts";
   * import { RuntimeServiceClient } from "./client.ts";
   * const client = new RuntimeServiceClient({ baseUrl: "http://127.0.0.1:7777", token: "art_x" });
   * assert.ok(client.audit instanceof AuditApi);
   * ```
   */
  constructor(send: SendRequest) {
    this.#send = send;
  }

  /**
   * One page of the audit log, filtered by `principalId` and `action`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: () => Promise.resolve(Response.json({ entries: [], nextCursor: null })),
   * });
   * assert.deepEqual(await client.audit.list(), { entries: [], nextCursor: null });
   * ```
   */
  async list(params: ListAuditParams = {}, options: CallOptions = {}): Promise<AuditPage> {
    const answer = await this.#send({
      method: "GET",
      path: `/v1/audit${auditQuery(params)}`,
      authenticated: true,
      options,
    });
    const body = answer.body;
    if (!isObject(body) || !Array.isArray(body.entries)) {
      throw invalidAnswer(answer, "The audit answer has no entries array");
    }
    for (const entry of body.entries) {
      if (!isObject(entry) || typeof entry.seq !== "number" || typeof entry.action !== "string") {
        throw invalidAnswer(answer, "The runtime service answered with a malformed audit entry");
      }
    }
    const next = body.nextCursor;
    return {
      entries: body.entries as AuditEntry[],
      nextCursor: typeof next === "string" && next !== "" ? next : null,
    };
  }

  /**
   * Every entry matching `params`, page after page (`limit` is the page size).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RuntimeServiceClient } from "./client.ts";
   * const entry = (seq: number) => ({
   *   seq, at: "2026-07-23T10:00:00Z", action: "principal.issued", actorId: "admin",
   *   correlationId: `c${seq}`, outcome: "success",
   * });
   * const client = new RuntimeServiceClient({
   *   baseUrl: "http://127.0.0.1:7777",
   *   token: "art_x",
   *   fetch: (input) => {
   *     const cursor = new URL(String(input)).searchParams.get("cursor");
   *     return Promise.resolve(Response.json(
   *       cursor === null ? { entries: [entry(2)], nextCursor: "n" } : { entries: [entry(1)], nextCursor: null },
   *     ));
   *   },
   * });
   * const seqs: number[] = [];
   * for await (const item of client.audit.listAll({ limit: 1 })) seqs.push(item.seq);
   * assert.deepEqual(seqs, [2, 1]);
   * ```
   */
  async *listAll(
    params: Omit<ListAuditParams, "cursor"> = {},
    options: CallOptions = {},
  ): AsyncGenerator<AuditEntry, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...params, cursor }, options);
      yield* page.entries;
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }
}

function auditQuery(params: ListAuditParams): string {
  if (params === null || typeof params !== "object") {
    throw new TypeError("list params must be an object");
  }
  const { limit, cursor, principalId, action } = params;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
    throw new RangeError("limit must be a positive integer");
  }
  checkedCursor(cursor);
  if (principalId !== undefined) idSegment(principalId, "principalId");
  if (action !== undefined && (typeof action !== "string" || action === "")) {
    throw new TypeError("action must be a non-empty string");
  }
  return queryOf({ limit, cursor, principalId, action });
}
