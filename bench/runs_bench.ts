/**
 * The latency `POST /v1/runs` adds over calling the provider directly.
 *
 * Both paths start the same run on the in-process fake provider (a session, then the kickoff
 * message), one request at a time:
 *
 * - direct: `ProviderManagedAgentClient.createSession` + `sendEvents`, what the gateway itself
 *   calls;
 * - gateway: `POST /v1/runs` over HTTP to the runtime (`Deno.serve`, KV store in a temp file, the
 *   shared rules, the idempotency claim, the quota reservation, the run record and the audit
 *   entry), which then makes the same two provider calls.
 *
 * The paths alternate in rounds; each reports its median and p95 per start, and the difference of
 * the medians is the gateway's cost. Each gateway run is cancelled after it is timed, so the
 * active-run quota never fills.
 *
 * Two more paths measure what a budget costs a start (issue 38's target: at most 1.3×): the same
 * `POST /v1/runs` by two issued principals, one without spend limits and one with a budget and a
 * `maxRunCost` (its start also holds the run's cap in the slot's store step and sends the
 * provider's session budget), alternating in the same rounds. Run:
 * `deno run -A bench/runs_bench.ts [--starts N] [--rounds N] [--quick]`.
 *
 * @module
 */
import { startBenchGateway } from "./_gateway.ts";

/** One path's figures, in ms per start. */
export interface RunsBenchPath {
  /** Median over every timed start. */
  medianMs: number;
  /** 95th percentile. */
  p95Ms: number;
}

/** The result of {@linkcode runRunsBench}. */
export interface RunsBenchResult {
  /** Timed starts per path. */
  starts: number;
  /** Calling the provider directly. */
  direct: RunsBenchPath;
  /** `POST /v1/runs` through the gateway. */
  gateway: RunsBenchPath;
  /** gateway median − direct median, in ms. */
  addedMs: number;
  /** `POST /v1/runs` by an issued principal without spend limits. */
  unbudgeted: RunsBenchPath;
  /** `POST /v1/runs` by an issued principal with a budget and a `maxRunCost`. */
  budgeted: RunsBenchPath;
  /** budgeted median ÷ unbudgeted median. */
  budgetRatio: number;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

function flag(args: string[], name: string, fallback: number): number {
  const index = args.indexOf(`--${name}`);
  return index === -1 ? fallback : Number(args[index + 1]);
}

/** Runs the benchmark. */
export async function runRunsBench(
  options: { starts?: number; rounds?: number } = {},
): Promise<RunsBenchResult> {
  const starts = options.starts ?? 300;
  const rounds = options.rounds ?? 5;
  const gateway = await startBenchGateway({ prefix: "runs-bench-" });
  const { url, token, provider: direct, agentId, environmentId } = gateway;
  // Turns stay open, as a real run's would while it is started.
  gateway.fake.managedAgents!.script = () => [{ delayMs: 3_600_000 }];

  function headers(bearer = token): Headers {
    return new Headers({
      authorization: `Bearer ${bearer}`,
      "x-interface-version": "2026-07-23",
      "x-correlation-id": crypto.randomUUID(),
      "x-deadline": new Date(Date.now() + 60_000).toISOString(),
      "idempotency-key": crypto.randomUUID(),
      "content-type": "application/json",
    });
  }

  async function viaGateway(bearer = token): Promise<number> {
    const began = performance.now();
    const response = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: headers(bearer),
      body: JSON.stringify({ input: "bench" }),
    });
    const run = await response.json();
    const took = performance.now() - began;
    if (response.status !== 201) throw new Error(`POST /v1/runs answered ${response.status}`);
    const cancel = await fetch(`${url}/v1/runs/${run.runId}/cancel`, {
      method: "POST",
      headers: headers(bearer),
    });
    await cancel.body?.cancel();
    return took;
  }

  /** Issues a principal that may start runs, with `limits` (spend limits, say). */
  async function issue(limits: Record<string, unknown>): Promise<string> {
    const response = await fetch(`${url}/v1/principals`, {
      method: "POST",
      headers: headers(),
      body: JSON.stringify({
        principalId: crypto.randomUUID(),
        capabilities: ["session:read", "session:write"],
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        maxActiveRuns: 100,
        ...limits,
      }),
    });
    const issued = await response.json();
    if (response.status !== 201) throw new Error(`POST /v1/principals answered ${response.status}`);
    return issued.bearer;
  }

  async function viaClient(): Promise<number> {
    const began = performance.now();
    const session = await direct.createSession({ agentId, environmentId });
    await direct.sendEvents(session.id, [
      { type: "user.message", content: [{ type: "text", text: "bench" }] },
    ]);
    return performance.now() - began;
  }

  const gatewayTimes: number[] = [];
  const directTimes: number[] = [];
  const unbudgetedTimes: number[] = [];
  const budgetedTimes: number[] = [];
  try {
    const plain = await issue({});
    // A budget that never runs out here, and a cap each start holds.
    const capped = await issue({
      budget: { amount: "100000000000", currency: "USD", period: "month" },
      maxRunCost: { amount: "500", currency: "USD" },
    });
    for (let i = 0; i < 20; i++) {
      await viaClient();
      await viaGateway();
      await viaGateway(plain);
      await viaGateway(capped);
    }
    const perRound = Math.max(1, Math.ceil(starts / rounds));
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < perRound; i++) directTimes.push(await viaClient());
      for (let i = 0; i < perRound; i++) gatewayTimes.push(await viaGateway());
      for (let i = 0; i < perRound; i++) {
        unbudgetedTimes.push(await viaGateway(plain));
        budgetedTimes.push(await viaGateway(capped));
      }
    }
  } finally {
    await gateway.close();
  }
  const path = (times: number[]): RunsBenchPath => ({
    medianMs: percentile(times, 0.5),
    p95Ms: percentile(times, 0.95),
  });
  const result = {
    starts: directTimes.length,
    direct: path(directTimes),
    gateway: path(gatewayTimes),
    addedMs: 0,
    unbudgeted: path(unbudgetedTimes),
    budgeted: path(budgetedTimes),
    budgetRatio: 0,
  };
  result.addedMs = result.gateway.medianMs - result.direct.medianMs;
  result.budgetRatio = result.budgeted.medianMs / result.unbudgeted.medianMs;
  return result;
}

if (import.meta.main) {
  const quick = Deno.args.includes("--quick") || Deno.env.get("BENCH_QUICK") === "1";
  const result = await runRunsBench({
    starts: flag(Deno.args, "starts", quick ? 40 : 300),
    rounds: flag(Deno.args, "rounds", quick ? 2 : 5),
  });
  const ms = (value: number) => value.toFixed(2);
  console.log(
    `runs gateway (${result.starts} starts per path): direct ${ms(result.direct.medianMs)} ms ` +
      `median (p95 ${ms(result.direct.p95Ms)}), POST /v1/runs ${ms(result.gateway.medianMs)} ms ` +
      `median (p95 ${ms(result.gateway.p95Ms)}); the gateway adds ${ms(result.addedMs)} ms`,
  );
  console.log(
    `budgets (${result.starts} starts each): unbudgeted principal ` +
      `${ms(result.unbudgeted.medianMs)} ms median (p95 ${ms(result.unbudgeted.p95Ms)}), ` +
      `budgeted ${ms(result.budgeted.medianMs)} ms median (p95 ${ms(result.budgeted.p95Ms)}); ` +
      `budgeted ÷ unbudgeted ${result.budgetRatio.toFixed(2)}× (target ≤ 1.3×)`,
  );
}
