/**
 * Tool answers and webhook delivery ids in Deno KV. Keys, below the store's namespace root:
 *
 * - `["tool-answer", runId, toolUseId]` → {@linkcode ToolAnswerRecord} (expires 7 days after
 *   its last write)
 * - `["webhook-delivery", id]` → ms of the delivery (expires after the retention)
 *
 * Every step is one atomic operation checked against the versionstamp it read, so two replicas
 * claiming at once cannot both win. KV's own expiry drops old records.
 *
 * @module
 */
import {
  ANSWER_RETENTION_MS,
  type AnswerStore,
  type ToolAnswerClaim,
  type ToolAnswerClaimParams,
  type ToolAnswerRecord,
  type ToolAnswerResult,
} from "../answer_types.ts";
import { StoreUnavailableError } from "../types.ts";
import { commitKv } from "./_commit.ts";

const MAX_ATTEMPTS = 64;

function fail(error: unknown): Error {
  if (error instanceof StoreUnavailableError) return error;
  return new StoreUnavailableError("The KV store failed", { cause: error });
}

function contention(): StoreUnavailableError {
  return new StoreUnavailableError("The KV store is too contended to commit");
}

/** The answer part of the KV store; the store delegates to it. */
export class KvAnswerStore implements AnswerStore {
  #kv: Deno.Kv;
  #root: Deno.KvKey;

  constructor(kv: Deno.Kv, root: Deno.KvKey) {
    this.#kv = kv;
    this.#root = root;
  }

  #answerKey(runId: string, toolUseId: string): Deno.KvKey {
    return [...this.#root, "tool-answer", runId, toolUseId];
  }

  async claimToolAnswer(params: ToolAnswerClaimParams): Promise<ToolAnswerClaim> {
    try {
      const key = this.#answerKey(params.runId, params.toolUseId);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const current = await this.#kv.get<ToolAnswerRecord>(key);
        const existing = current.value;
        const stale = existing !== null && existing.state === "claimed" &&
          existing.claimedAt <= params.now - params.staleMs;
        if (existing !== null && !stale) return { state: "taken", record: existing };
        const record: ToolAnswerRecord = {
          runId: params.runId,
          toolUseId: params.toolUseId,
          kind: params.kind,
          state: "claimed",
          token: crypto.randomUUID(),
          principalId: params.principalId,
          result: params.result,
          claimedAt: params.now,
        };
        const result = await commitKv(
          this.#kv.atomic().check(current)
            .set(key, record, { expireIn: ANSWER_RETENTION_MS }),
        );
        if (result.ok) {
          return stale
            ? { state: "claimed", token: record.token, recovered: existing! }
            : { state: "claimed", token: record.token };
        }
      }
      throw contention();
    } catch (error) {
      throw fail(error);
    }
  }

  async completeToolAnswer(
    runId: string,
    toolUseId: string,
    token: string,
    final: { principalId: string; result: ToolAnswerResult; answeredAt: string },
  ): Promise<boolean> {
    try {
      const key = this.#answerKey(runId, toolUseId);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const current = await this.#kv.get<ToolAnswerRecord>(key);
        const record = current.value;
        if (record === null || record.state !== "claimed" || record.token !== token) return false;
        const answered: ToolAnswerRecord = { ...record, ...final, state: "answered" };
        const result = await commitKv(
          this.#kv.atomic().check(current)
            .set(key, answered, { expireIn: ANSWER_RETENTION_MS }),
        );
        if (result.ok) return true;
      }
      throw contention();
    } catch (error) {
      throw fail(error);
    }
  }

  async releaseToolAnswer(runId: string, toolUseId: string, token: string): Promise<void> {
    try {
      const key = this.#answerKey(runId, toolUseId);
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const current = await this.#kv.get<ToolAnswerRecord>(key);
        const record = current.value;
        if (record === null || record.state !== "claimed" || record.token !== token) return;
        if ((await commitKv(this.#kv.atomic().check(current).delete(key))).ok) return;
      }
      throw contention();
    } catch (error) {
      throw fail(error);
    }
  }

  async getToolAnswer(runId: string, toolUseId: string): Promise<ToolAnswerRecord | null> {
    try {
      return (await this.#kv.get<ToolAnswerRecord>(this.#answerKey(runId, toolUseId))).value;
    } catch (error) {
      throw fail(error);
    }
  }

  async listToolAnswers(runId: string): Promise<ToolAnswerRecord[]> {
    try {
      const records: ToolAnswerRecord[] = [];
      const prefix = [...this.#root, "tool-answer", runId];
      for await (const entry of this.#kv.list<ToolAnswerRecord>({ prefix }, { limit: 1000 })) {
        records.push(entry.value);
      }
      return records;
    } catch (error) {
      throw fail(error);
    }
  }

  async recordWebhookDelivery(id: string, now: number, ttlMs: number): Promise<boolean> {
    try {
      const key = [...this.#root, "webhook-delivery", id];
      const result = await commitKv(
        this.#kv.atomic().check({ key, versionstamp: null })
          .set(key, now, { expireIn: ttlMs }),
      );
      if (result.ok) return true;
      // KV drops expired keys lazily: an entry past its time is a new delivery.
      const seen = await this.#kv.get<number>(key);
      if (seen.value !== null && seen.value + ttlMs > now) return false;
      return (await commitKv(this.#kv.atomic().check(seen).set(key, now, { expireIn: ttlMs }))).ok;
    } catch (error) {
      throw fail(error);
    }
  }

  /** KV expires the records by itself: nothing to do. */
  purgeAnswers(_now: number): Promise<number> {
    return Promise.resolve(0);
  }
}
