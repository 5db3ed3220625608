/**
 * What the spend tests share: principals with budgets, agents whose turns spend a known list
 * cost, waiting for a run's state, ending a held turn at the fake provider, and the budget each
 * provider session was created or updated with.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Gateway } from "./_harness.ts";
import { pause, type TurnStep, usageReport } from "../../testing/mod.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** Money as the wire writes it. */
export function usd(amount: number): { amount: string; currency: "USD" } {
  return { amount: String(amount), currency: "USD" };
}

/** A usage report of `cents` list cost at the fake's default prices ($3 per million input). */
export function spend(cents: number): TurnStep {
  // Rounded down: the fake rounds the cost of the totals up to a whole cent.
  return usageReport({ inputTokens: Math.floor(cents * 10_000 / 3), outputTokens: 0 });
}

/** A turn that spends `cents`, then stays running (until the test ends it). */
export function spendAndHold(cents: number): TurnStep[] {
  return [spend(cents), pause(600_000)];
}

/** Sets the turn script of the gateway's agent. */
export function script(gateway: Gateway, turn: () => TurnStep[], agentId = gateway.agentId): void {
  gateway.fake.managedAgents!.agentScripts.set(agentId, { turn });
}

/** Polls `check` every 20 ms for up to `ms`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  ms = 10_000,
  what = "the condition",
): Promise<void> {
  const until = Date.now() + ms;
  while (!await check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Reads a run (as the admin) until `done` holds; answers it. */
export async function runWhen(
  gateway: Gateway,
  runId: string,
  done: (run: Json) => boolean,
  ms = 10_000,
): Promise<Json> {
  let run: Json;
  await waitFor(
    async () => {
      const answer = await gateway.request("GET", `/v1/runs/${runId}`);
      assert.equal(answer.status, 200, answer.text);
      run = answer.json;
      return done(run);
    },
    ms,
    `run ${runId}`,
  );
  return run;
}

/** Ends the held turn of a run at the fake provider, as the provider would end it. */
export function endTurn(gateway: Gateway, runId: string): void {
  const state = gateway.fake.managedAgents!;
  const session = state.sessions.get(runId)!;
  for (const timer of session.timers) clearTimeout(timer);
  session.timers.clear();
  state.emit(runId, {
    type: "session.status_idle",
    stop_reason: { type: "end_turn" },
    stop_details: null,
  });
}

/** The budget (`max_list_cost` amount) the fake's session of `runId` has now, or null. */
export function sessionBudget(gateway: Gateway, runId: string): string | null {
  const budget = gateway.fake.managedAgents!.sessions.get(runId)?.record.budget as Json;
  return budget?.max_list_cost?.amount ?? null;
}

/** The budgets (`max_list_cost` amounts) the gateway sent in updates of the session `runId`. */
export function budgetUpdates(gateway: Gateway, runId: string): (string | null)[] {
  return gateway.fake.requests
    .filter((request) =>
      request.method === "POST" && request.path === `/v1/sessions/${runId}` &&
      typeof request.body === "object" && request.body !== null && "budget" in request.body
    )
    .map((request) => (request.body as Json).budget?.max_list_cost?.amount ?? null);
}
