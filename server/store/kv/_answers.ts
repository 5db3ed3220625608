/**
 * The answers part of the KV store: tool answers and webhook delivery ids. Keys, below the
 * store's namespace root:
 *
 * - `["tool-answer", runId, toolUseId]` → {@linkcode ToolAnswerRecord} (expires 7 days after
 *   its last write)
 * - `["webhook-delivery", id]` → ms of the delivery (expires after the retention)
 *
 * Every step is one atomic operation checked against the versionstamp it read, so two replicas
 * claiming at once cannot both win. KV's own expiry drops old records. A completion appends its
 * activity entry (`tool.answered`) in its own operation, through {@linkcode KvActivityLog}.
 *
 * @module
 */
import {
  ANSWER_RETENTION_MS,
  type ToolAnswerClaim,
  type ToolAnswerClaimParams,
  type ToolAnswerRecord,
  type ToolAnswerResult,
} from "../answer_types.ts";
import type { AnswerStore } from "../answers.ts";
import type { ActivityInput } from "../activity.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";
import type { KvActivityLog } from "./_activity.ts";

/** The answers part of the KV store. */
export class KvAnswers implements AnswerStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  readonly #activity: KvActivityLog;

  constructor(commits: KvCommits, root: Deno.KvKey, activity: KvActivityLog) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
    this.#activity = activity;
  }

  #answerKey(runId: string, toolUseId: string): Deno.KvKey {
    return [...this.#root, "tool-answer", runId, toolUseId];
  }

  claim(params: ToolAnswerClaimParams): Promise<ToolAnswerClaim> {
    const key = this.#answerKey(params.runId, params.toolUseId);
    return this.#commits.retry(async () => {
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
      const result = await this.#commits.commit(
        this.#kv.atomic().check(current).set(key, record, { expireIn: ANSWER_RETENTION_MS }),
      );
      if (!result.ok) return AGAIN;
      return stale
        ? { state: "claimed", token: record.token, recovered: existing! }
        : { state: "claimed", token: record.token };
    });
  }

  complete(
    runId: string,
    toolUseId: string,
    token: string,
    final: { principalId: string; result: ToolAnswerResult; answeredAt: string },
    activity?: readonly ActivityInput[],
  ): Promise<boolean> {
    const key = this.#answerKey(runId, toolUseId);
    return this.#activity.serial(activity, () =>
      this.#commits.retry(async () => {
        const current = await this.#kv.get<ToolAnswerRecord>(key);
        const record = current.value;
        if (record === null || record.state !== "claimed" || record.token !== token) return false;
        const plan = await this.#activity.read(activity);
        const answered: ToolAnswerRecord = { ...record, ...final, state: "answered" };
        const operation = this.#kv.atomic().check(current)
          .set(key, answered, { expireIn: ANSWER_RETENTION_MS });
        this.#activity.add(operation, plan);
        return (await this.#commits.commit(operation)).ok ? true : AGAIN;
      }));
  }

  release(runId: string, toolUseId: string, token: string): Promise<void> {
    const key = this.#answerKey(runId, toolUseId);
    return this.#commits.retry(async () => {
      const current = await this.#kv.get<ToolAnswerRecord>(key);
      const record = current.value;
      if (record === null || record.state !== "claimed" || record.token !== token) return;
      const result = await this.#commits.commit(this.#kv.atomic().check(current).delete(key));
      return result.ok ? undefined : AGAIN;
    });
  }

  async get(runId: string, toolUseId: string): Promise<ToolAnswerRecord | null> {
    try {
      return (await this.#kv.get<ToolAnswerRecord>(this.#answerKey(runId, toolUseId))).value;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async list(runId: string): Promise<ToolAnswerRecord[]> {
    try {
      const records: ToolAnswerRecord[] = [];
      const prefix = [...this.#root, "tool-answer", runId];
      for await (const entry of this.#kv.list<ToolAnswerRecord>({ prefix }, { limit: 1000 })) {
        records.push(entry.value);
      }
      return records;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async recordWebhookDelivery(id: string, now: number, ttlMs: number): Promise<boolean> {
    try {
      const key = [...this.#root, "webhook-delivery", id];
      const result = await this.#commits.commit(
        this.#kv.atomic().check({ key, versionstamp: null }).set(key, now, { expireIn: ttlMs }),
      );
      if (result.ok) return true;
      // KV drops expired keys lazily: an entry past its time is a new delivery.
      const seen = await this.#kv.get<number>(key);
      if (seen.value !== null && seen.value + ttlMs > now) return false;
      const again = this.#kv.atomic().check(seen).set(key, now, { expireIn: ttlMs });
      return (await this.#commits.commit(again)).ok;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  /** KV expires the records by itself: nothing to do. */
  purge(_now: number): Promise<number> {
    return Promise.resolve(0);
  }
}
