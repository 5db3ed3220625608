/**
 * The spend part of the KV store (what it keeps: see `../spend.ts`). Keys, below the store's
 * namespace root:
 *
 * - `["spend-ledger", principalId, period]` → {@linkcode LedgerValue} (a day's or a month's
 *   expires {@linkcode USAGE_RETENTION_MS} after its last write)
 * - `["spend-hold", principalId, holdId]` → {@linkcode HoldValue}
 * - `["spend-run-hold", runId, principalId, holdId]` → true: the holds given to a run
 * - `["spend-run", runId]` → {@linkcode RunTotals}: what the run settled so far
 * - `["usage-by-time", at, runId, n]` and `["usage-by-principal", principalId, at, runId, n]` →
 *   {@linkcode UsageEntry} (the `n`th settlement of the run; expire after the retention)
 *
 * The runs part takes and attaches holds in its own atomic operations (the slot reservation, the
 * run's creation) through {@linkcode readHoldState}, {@linkcode addHold} and
 * {@linkcode attachHold}; each reads what it checks first, and the operation is checked against
 * those reads, so a ledger moved by another replica meanwhile makes the step run again.
 *
 * One part in one file of about 600 lines: the accessors share its key layout.
 *
 * @module
 */
import type {
  GrantedHold,
  RunSettlement,
  SettlementResult,
  SpendHold,
  SpendHoldRequest,
  SpendLedger,
  SpendStore,
  TokenCounts,
  UsageQuery,
  UsageSum,
} from "../spend.ts";
import { USAGE_RETENTION_MS } from "../spend.ts";
import { AGAIN, type KvCommits, storeFailure } from "./_commit.ts";

/** A ledger as kept. */
interface LedgerValue {
  spent: bigint;
  reserved: bigint;
}

/** A hold as kept. */
export interface HoldValue {
  runId: string | null;
  turn: number;
  period: string | null;
  amount: bigint;
  leaseUntil: number;
}

/** What a run settled so far. */
interface RunTotals extends TokenCounts {
  principalId: string;
  cost: bigint;
  /** The period of the run's latest hold (what it settles beyond its holds counts there). */
  period: string | null;
  /** Usage entries written for it. */
  entries: number;
}

/** The totals of a run that settled nothing yet. */
function newTotals(principalId: string): RunTotals {
  return { principalId, cost: 0n, period: null, entries: 0, ...ZERO_TOKENS };
}

/** One usage entry. */
interface UsageEntry extends TokenCounts {
  principalId: string;
  agentId: string;
  runId: string;
  cost: bigint;
}

const ZERO_TOKENS: TokenCounts = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
});

const TOKEN_FIELDS = [
  "inputTokens",
  "outputTokens",
  "cacheReadInputTokens",
  "cacheCreationInputTokens",
] as const;

function ledgerKey(root: Deno.KvKey, principalId: string, period: string): Deno.KvKey {
  return [...root, "spend-ledger", principalId, period];
}

function holdKey(root: Deno.KvKey, principalId: string, holdId: string): Deno.KvKey {
  return [...root, "spend-hold", principalId, holdId];
}

function runHoldKey(
  root: Deno.KvKey,
  runId: string,
  principalId: string,
  holdId: string,
): Deno.KvKey {
  return [...root, "spend-run-hold", runId, principalId, holdId];
}

function totalsKey(root: Deno.KvKey, runId: string): Deno.KvKey {
  return [...root, "spend-run", runId];
}

/** KV options of a ledger write: a past day's or month's goes after the retention. */
function ledgerOptions(period: string): { expireIn?: number } {
  return period === "total" ? {} : { expireIn: USAGE_RETENTION_MS };
}

/** Sets ledger entries changed by `deltas` (period → [spent, reserved] growth) into `operation`. */
function moveLedgers(
  operation: Deno.AtomicOperation,
  root: Deno.KvKey,
  principalId: string,
  ledgers: ReadonlyMap<string, Deno.KvEntryMaybe<LedgerValue>>,
  deltas: ReadonlyMap<string, { spent: bigint; reserved: bigint }>,
): void {
  for (const [period, delta] of deltas) {
    if (delta.spent === 0n && delta.reserved === 0n) continue;
    const entry = ledgers.get(period)!;
    const before = entry.value ?? { spent: 0n, reserved: 0n };
    const reserved = before.reserved + delta.reserved;
    operation.check(entry).set(
      ledgerKey(root, principalId, period),
      { spent: before.spent + delta.spent, reserved: reserved > 0n ? reserved : 0n },
      ledgerOptions(period),
    );
  }
}

async function readLedgers(
  kv: Deno.Kv,
  root: Deno.KvKey,
  principalId: string,
  periods: Iterable<string>,
): Promise<Map<string, Deno.KvEntryMaybe<LedgerValue>>> {
  const list = [...new Set(periods)];
  const entries = list.length === 0
    ? []
    : await kv.getMany<LedgerValue[]>(list.map((period) => ledgerKey(root, principalId, period)));
  return new Map(list.map((period, i) => [period, entries[i]]));
}

/** A run's holds with their entries, read through its index. */
async function readRunHolds(
  kv: Deno.Kv,
  root: Deno.KvKey,
  runId: string,
): Promise<{ principalId: string; holdId: string; entry: Deno.KvEntryMaybe<HoldValue> }[]> {
  const found: { principalId: string; holdId: string }[] = [];
  for await (const entry of kv.list({ prefix: [...root, "spend-run-hold", runId] })) {
    const key = entry.key;
    found.push({
      principalId: key[key.length - 2] as string,
      holdId: key[key.length - 1] as string,
    });
  }
  if (found.length === 0) return [];
  const entries = await kv.getMany<HoldValue[]>(
    found.map((hold) => holdKey(root, hold.principalId, hold.holdId)),
  );
  return found.map((hold, i) => ({ ...hold, entry: entries[i] }));
}

/** What a hold request found in the store: the entries it checks and what the hold would get. */
export interface HoldState {
  /** The request. */
  readonly request: SpendHoldRequest;
  /** The hold's own entry (it may exist already: answered as it is). */
  readonly hold: Deno.KvEntryMaybe<HoldValue>;
  /** The ledger of its period, when it has one. */
  readonly ledger: Deno.KvEntryMaybe<LedgerValue> | null;
  /** The run's settled totals and holds, for a follow-up's. */
  readonly totals: Deno.KvEntryMaybe<RunTotals> | null;
  readonly runHolds: readonly Deno.KvEntryMaybe<HoldValue>[];
  /** What the run settled and holds already. */
  readonly taken: bigint;
}

/** Reads what a hold request checks (see {@linkcode HoldState}). */
export async function readHoldState(
  kv: Deno.Kv,
  root: Deno.KvKey,
  principalId: string,
  request: SpendHoldRequest,
): Promise<HoldState> {
  const keys: Deno.KvKey[] = [holdKey(root, principalId, request.holdId)];
  if (request.period !== null) keys.push(ledgerKey(root, principalId, request.period));
  if (request.runId !== undefined) keys.push(totalsKey(root, request.runId));
  const entries = await kv.getMany<unknown[]>(keys);
  const hold = entries[0] as Deno.KvEntryMaybe<HoldValue>;
  const ledger = request.period === null ? null : entries[1] as Deno.KvEntryMaybe<LedgerValue>;
  const totals = request.runId === undefined
    ? null
    : entries[entries.length - 1] as Deno.KvEntryMaybe<RunTotals>;
  const runHolds = request.runId === undefined
    ? []
    : (await readRunHolds(kv, root, request.runId)).map((found) => found.entry);
  let taken = totals?.value?.cost ?? 0n;
  for (const entry of runHolds) taken += entry.value?.amount ?? 0n;
  return { request, hold, ledger, totals, runHolds, taken };
}

/**
 * What a new hold gets: the least of the budget's and the run cap's leftovers, or the refusal
 * when that is nothing.
 */
export function holdAmount(
  state: HoldState,
): { amount: bigint; ceiling: bigint } | { limit: "budget" | "maxRunCost"; left: bigint } {
  const { request } = state;
  if (request.fence === true && state.runHolds.some((entry) => entry.value !== null)) {
    // A follow-up to a run still active and holding money: no new money, a zero hold.
    return { amount: 0n, ceiling: state.taken };
  }
  let amount: bigint | null = null;
  let limit: "budget" | "maxRunCost" = "budget";
  if (request.limit !== null) {
    const ledger = state.ledger?.value ?? { spent: 0n, reserved: 0n };
    amount = request.limit - ledger.spent - ledger.reserved;
  }
  if (request.runCap !== null) {
    const left = request.runCap - state.taken;
    if (amount === null || left < amount) {
      amount = left;
      limit = "maxRunCost";
    }
  }
  const granted = amount ?? 0n;
  if (granted <= 0n) return { limit, left: granted > 0n ? granted : 0n };
  return { amount: granted, ceiling: state.taken + granted };
}

/** The hold a state already holds, answered as it is (a repeated request). */
export function existingHold(state: HoldState): GrantedHold | null {
  const held = state.hold.value;
  if (held === null) return null;
  return { amount: held.amount, ceiling: state.taken + (state.request.runId ? 0n : held.amount) };
}

/** Adds to `operation` a new hold of `amount` with its lease, and its ledger's reservation. */
export function addHold(
  operation: Deno.AtomicOperation,
  root: Deno.KvKey,
  principalId: string,
  state: HoldState,
  amount: bigint,
  leaseUntil: number,
): void {
  const { request } = state;
  operation.check(state.hold);
  if (state.totals !== null) operation.check(state.totals);
  for (const entry of state.runHolds) operation.check(entry);
  const runId = request.runId ?? null;
  if (runId !== null) {
    // Written again (as it is, or new), so a settlement of the run that read its holds before
    // this one fails its check and reads them again: it must see the later turn's hold.
    operation.set(totalsKey(root, runId), state.totals?.value ?? newTotals(principalId));
  }
  operation.set(
    holdKey(root, principalId, request.holdId),
    {
      runId,
      turn: request.turn,
      period: request.period,
      amount,
      leaseUntil,
    } satisfies HoldValue,
  );
  if (runId !== null) operation.set(runHoldKey(root, runId, principalId, request.holdId), true);
  if (request.period !== null && state.ledger !== null) {
    moveLedgers(
      operation,
      root,
      principalId,
      new Map([[request.period, state.ledger]]),
      new Map([[request.period, { spent: 0n, reserved: amount }]]),
    );
  }
}

/** The hold of a start's slot, to give its run when the run is recorded. */
export function startHoldKey(root: Deno.KvKey, principalId: string, slotId: string): Deno.KvKey {
  return holdKey(root, principalId, slotId);
}

/**
 * Adds to `operation` what gives the start's hold (read as `hold`) its run: the hold names the
 * run and is indexed under it. Nothing when there is no hold.
 */
export function attachHold(
  operation: Deno.AtomicOperation,
  root: Deno.KvKey,
  principalId: string,
  slotId: string,
  hold: Deno.KvEntryMaybe<HoldValue>,
  runId: string,
): void {
  if (hold.value === null) return;
  operation.check(hold).set(holdKey(root, principalId, slotId), { ...hold.value, runId });
  operation.set(runHoldKey(root, runId, principalId, slotId), true);
}

/**
 * Drops the principal's holds whose lease passed and that have no run: a start's that never
 * recorded its run counts as spent (its session may be running unrecorded: its replica died
 * between creating it and recording the run, and nothing would ever settle it); one whose run is
 * gone is given back. The holds of a run that exists are its tails' to settle or give back (the
 * session's history tells whether a follow-up reached the provider). `turnsOf` reads a run's
 * recorded turns (null: no such run).
 */
export async function sweepHolds(
  commits: KvCommits,
  root: Deno.KvKey,
  principalId: string,
  now: number,
  turnsOf: (runId: string) => Promise<number | null>,
): Promise<void> {
  const kv = commits.kv;
  for await (const entry of kv.list<HoldValue>({ prefix: [...root, "spend-hold", principalId] })) {
    const hold = entry.value;
    if (hold.leaseUntil > now) continue;
    if (hold.runId !== null && await turnsOf(hold.runId) !== null) continue;
    await releaseHold(commits, root, principalId, entry.key[entry.key.length - 1] as string, hold, {
      spend: hold.runId === null,
    });
  }
}

/**
 * Drops one hold (when it is still `expected`) and gives its amount back to its ledger, or with
 * `spend` counts it as spent there.
 */
function releaseHold(
  commits: KvCommits,
  root: Deno.KvKey,
  principalId: string,
  holdId: string,
  expected?: HoldValue,
  options: { spend?: boolean } = {},
): Promise<void> {
  const kv = commits.kv;
  const key = holdKey(root, principalId, holdId);
  return commits.retry(async () => {
    const entry = await kv.get<HoldValue>(key);
    const hold = entry.value;
    if (hold === null) return;
    if (
      expected !== undefined && (hold.amount !== expected.amount || hold.turn !== expected.turn)
    ) {
      return;
    }
    const operation = kv.atomic().check(entry).delete(key);
    if (hold.runId !== null) operation.delete(runHoldKey(root, hold.runId, principalId, holdId));
    if (hold.period !== null) {
      const ledgers = await readLedgers(kv, root, principalId, [hold.period]);
      moveLedgers(
        operation,
        root,
        principalId,
        ledgers,
        new Map([[hold.period, {
          spent: options.spend === true ? hold.amount : 0n,
          reserved: -hold.amount,
        }]]),
      );
    }
    return (await commits.commit(operation)).ok ? undefined : AGAIN;
  });
}

function maxTokens(a: TokenCounts, b: TokenCounts): TokenCounts {
  return {
    inputTokens: Math.max(a.inputTokens, b.inputTokens),
    outputTokens: Math.max(a.outputTokens, b.outputTokens),
    cacheReadInputTokens: Math.max(a.cacheReadInputTokens, b.cacheReadInputTokens),
    cacheCreationInputTokens: Math.max(a.cacheCreationInputTokens, b.cacheCreationInputTokens),
  };
}

/** The spend part of the KV store. */
export class KvSpend implements SpendStore {
  readonly #commits: KvCommits;
  readonly #kv: Deno.Kv;
  readonly #root: Deno.KvKey;
  readonly #turnsOf: (runId: string) => Promise<number | null>;

  /** `turnsOf` reads a run's recorded turns through the runs part (null: no such run). */
  constructor(
    commits: KvCommits,
    root: Deno.KvKey,
    turnsOf: (runId: string) => Promise<number | null>,
  ) {
    this.#commits = commits;
    this.#kv = commits.kv;
    this.#root = root;
    this.#turnsOf = turnsOf;
  }

  async ledger(principalId: string, period: string): Promise<SpendLedger> {
    return (await this.ledgers([{ principalId, period }]))[0];
  }

  async ledgers(keys: readonly { principalId: string; period: string }[]): Promise<SpendLedger[]> {
    try {
      const out: SpendLedger[] = [];
      for (let i = 0; i < keys.length; i += 10) {
        const batch = keys.slice(i, i + 10);
        const entries = await this.#kv.getMany<LedgerValue[]>(
          batch.map((key) => ledgerKey(this.#root, key.principalId, key.period)),
        );
        for (const entry of entries) {
          out.push({ spent: entry.value?.spent ?? 0n, reserved: entry.value?.reserved ?? 0n });
        }
      }
      return out;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  release(principalId: string, holdId: string): Promise<void> {
    return releaseHold(this.#commits, this.#root, principalId, holdId);
  }

  settle(report: RunSettlement): Promise<SettlementResult> {
    const kv = this.#kv;
    const root = this.#root;
    const key = totalsKey(root, report.runId);
    return this.#commits.retry(async () => {
      const totals = await kv.get<RunTotals>(key);
      const holds = (await readRunHolds(kv, root, report.runId))
        .filter((found) => found.entry.value !== null)
        .sort((a, b) => a.entry.value!.turn - b.entry.value!.turn);
      const before: RunTotals = totals.value ?? newTotals(report.principalId);
      const covered = holds.filter((found) => found.entry.value!.turn <= report.turn);
      // A later turn holds already (a follow-up was sent before this end was settled): the
      // session may spend again under its ceiling, so the rest of these holds stays held.
      const release = report.final && covered.length === holds.length;
      let costAdded = report.cost !== null && report.cost > before.cost
        ? report.cost - before.cost
        : 0n;
      if (report.cost === null && report.final) {
        // Not reported: what the ended turn held counts as spent (fail closed).
        for (const found of covered) costAdded += found.entry.value!.amount;
      }
      const tokens = maxTokens(before, report.tokens);
      const grew = TOKEN_FIELDS.some((field) => tokens[field] > before[field]);
      if (costAdded === 0n && !grew && (!release || covered.length === 0)) {
        return { costAdded: 0n, released: 0n, cost: before.cost };
      }
      const operation = kv.atomic().check(totals);
      const deltas = new Map<string, { spent: bigint; reserved: bigint }>();
      const delta = (period: string | null, spent: bigint, reserved: bigint) => {
        if (period === null) return;
        const current = deltas.get(period) ?? { spent: 0n, reserved: 0n };
        deltas.set(period, { spent: current.spent + spent, reserved: current.reserved + reserved });
      };
      let remaining = costAdded;
      let released = 0n;
      let period = before.period;
      for (const found of covered) {
        const hold = found.entry.value!;
        period = hold.period;
        const taken = remaining < hold.amount ? remaining : hold.amount;
        remaining -= taken;
        const rest = hold.amount - taken;
        delta(hold.period, taken, release ? -hold.amount : -taken);
        operation.check(found.entry);
        if (release) {
          released += rest;
          operation.delete(holdKey(root, found.principalId, found.holdId))
            .delete(runHoldKey(root, report.runId, found.principalId, found.holdId));
        } else if (taken > 0n) {
          operation.set(holdKey(root, found.principalId, found.holdId), { ...hold, amount: rest });
        }
      }
      // Beyond the holds (the provider's last request past its ceiling, or a run without holds).
      delta(period, remaining, 0n);
      const ledgers = await readLedgers(kv, root, report.principalId, deltas.keys());
      moveLedgers(operation, root, report.principalId, ledgers, deltas);
      const cost = before.cost + costAdded;
      const entries = before.entries + (costAdded > 0n || grew ? 1 : 0);
      operation.set(key, { ...tokens, principalId: report.principalId, cost, period, entries });
      if (entries > before.entries) {
        const entry: UsageEntry = {
          principalId: report.principalId,
          agentId: report.agentId,
          runId: report.runId,
          cost: costAdded,
          inputTokens: tokens.inputTokens - before.inputTokens,
          outputTokens: tokens.outputTokens - before.outputTokens,
          cacheReadInputTokens: tokens.cacheReadInputTokens - before.cacheReadInputTokens,
          cacheCreationInputTokens: tokens.cacheCreationInputTokens -
            before.cacheCreationInputTokens,
        };
        const options = { expireIn: USAGE_RETENTION_MS };
        operation
          .set([...root, "usage-by-time", report.at, report.runId, entries], entry, options)
          .set(
            [...root, "usage-by-principal", report.principalId, report.at, report.runId, entries],
            entry,
            options,
          );
      }
      if (!(await this.#commits.commit(operation)).ok) return AGAIN;
      return { costAdded, released, cost };
    });
  }

  async runHolds(runId: string): Promise<SpendHold[]> {
    try {
      return (await readRunHolds(this.#kv, this.#root, runId))
        .filter((found) => found.entry.value !== null)
        .map((found) => ({
          principalId: found.principalId,
          holdId: found.holdId,
          ...found.entry.value!,
        }));
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async openHolds(limit: number): Promise<SpendHold[]> {
    try {
      const found: { principalId: string; holdId: string }[] = [];
      for await (
        const entry of this.#kv.list({ prefix: [...this.#root, "spend-run-hold"] }, { limit })
      ) {
        const key = entry.key;
        found.push({
          principalId: key[key.length - 2] as string,
          holdId: key[key.length - 1] as string,
        });
      }
      const out: SpendHold[] = [];
      for (let i = 0; i < found.length; i += 10) {
        const batch = found.slice(i, i + 10);
        const entries = await this.#kv.getMany<HoldValue[]>(
          batch.map((hold) => holdKey(this.#root, hold.principalId, hold.holdId)),
        );
        entries.forEach((entry, j) => {
          if (entry.value !== null) out.push({ ...batch[j], ...entry.value });
        });
      }
      return out;
    } catch (error) {
      throw storeFailure(error);
    }
  }

  async usage(query: UsageQuery): Promise<UsageSum[]> {
    const prefix = query.principalId === undefined
      ? [...this.#root, "usage-by-time"]
      : [...this.#root, "usage-by-principal", query.principalId];
    const sums = new Map<string, UsageSum>();
    try {
      for await (
        const entry of this.#kv.list<UsageEntry>({
          start: [...prefix, query.from],
          end: [...prefix, query.to],
        }, { batchSize: 500 })
      ) {
        const value = entry.value;
        const at = entry.key[prefix.length] as string;
        const key = query.groupBy === "principal"
          ? value.principalId
          : query.groupBy === "agent"
          ? value.agentId
          : at.slice(0, 10);
        let sum = sums.get(key);
        if (sum === undefined) {
          if (sums.size >= query.maxGroups) throw new RangeError("Too many usage groups");
          sums.set(key, sum = { key, cost: 0n, ...ZERO_TOKENS });
        }
        sum.cost += value.cost;
        for (const field of TOKEN_FIELDS) sum[field] += value[field];
      }
    } catch (error) {
      if (error instanceof RangeError) throw error;
      throw storeFailure(error);
    }
    return [...sums.values()].sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  }

  async purge(before: string): Promise<number> {
    try {
      let deleted = 0;
      const prefix = [...this.#root, "usage-by-time"];
      for await (
        const entry of this.#kv.list<UsageEntry>({ start: prefix, end: [...prefix, before] })
      ) {
        const [at, runId, n] = entry.key.slice(prefix.length);
        await this.#commits.commit(
          this.#kv.atomic().delete(entry.key).delete([
            ...this.#root,
            "usage-by-principal",
            entry.value.principalId,
            at,
            runId,
            n,
          ]),
        );
        deleted++;
      }
      // The settled totals of runs that are gone (and hold nothing).
      const totalsPrefix = [...this.#root, "spend-run"];
      for await (const entry of this.#kv.list<RunTotals>({ prefix: totalsPrefix })) {
        const runId = entry.key[totalsPrefix.length] as string;
        if (await this.#turnsOf(runId) !== null) continue;
        if ((await readRunHolds(this.#kv, this.#root, runId)).length > 0) continue;
        await this.#commits.commit(this.#kv.atomic().check(entry).delete(entry.key));
      }
      return deleted;
    } catch (error) {
      throw storeFailure(error);
    }
  }
}
