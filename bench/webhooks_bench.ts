/**
 * Webhook verifications per second: `verifyManagedAgentWebhook` (WebCrypto HMAC-SHA256) against
 * `npm:standardwebhooks` (pure-JS SHA-256), both verifying and JSON-parsing the same signed
 * delivery in the same process. Rounds alternate between the two. Each figure is the best round
 * (the one least disturbed by other work on the machine) with the median beside it, so the spread
 * shows; ratios are given for both.
 *
 * Rows:
 * - `sequential`: one verification at a time (`await` each). Bodies up to 4 KiB are hashed in
 *   JavaScript, longer ones by WebCrypto, whose every call pays a fixed hand-off to a worker
 *   thread.
 * - `16 in flight`: sixteen deliveries verified concurrently, as a server receiving deliveries
 *   does; the peer is synchronous, so its figure is its sequential one.
 *
 * Run: `deno run -A bench/webhooks_bench.ts` (`--quick` or `BENCH_QUICK=1` for a short run).
 * Targets: at least 1x at 1 KiB and 3x at 256 KiB (sequential rows, best rounds); printed as
 * `target` lines that `bench/main.ts` reads.
 *
 * @module
 */
import { Webhook } from "standardwebhooks";
import { verifyManagedAgentWebhook } from "../client/managed_agents/webhooks.ts";

const SECRET = "whsec_" + btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
const QUICK = Deno.args.includes("--quick") || Deno.env.get("BENCH_QUICK") === "1";
const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? (QUICK ? 3 : 7));
const ROUND_MS = Number(Deno.env.get("BENCH_ROUND_MS") ?? (QUICK ? 150 : 300));

/** Best and median round of one path, in verifications per second. */
interface Figure {
  best: number;
  median: number;
}

/** A measured row of the table. */
interface Row {
  body: string;
  mode: string;
  peer: Figure;
  ours: Figure;
}

function makeBody(size: number): string {
  const envelope = {
    type: "event",
    id: "wevt_011CZkZAtmR3yMPDzynEDxu7",
    created_at: "2026-05-28T20:26:40Z",
    data: { type: "session.status_idled", id: "sesn_011CZkZAtmR3yMPDzynEDxu7", pad: "" },
  };
  const base = JSON.stringify(envelope).length;
  envelope.data.pad = "x".repeat(Math.max(0, size - base));
  return JSON.stringify(envelope);
}

async function opsPerSecond(run: () => Promise<unknown> | unknown, batch: number): Promise<number> {
  let count = 0;
  const start = performance.now();
  while (performance.now() - start < ROUND_MS) {
    if (batch === 1) {
      await run();
    } else {
      const pending: (Promise<unknown> | unknown)[] = [];
      for (let i = 0; i < batch; i++) pending.push(run());
      await Promise.all(pending);
    }
    count += batch;
  }
  return count / ((performance.now() - start) / 1000);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function figure(rounds: number[]): Figure {
  return { best: Math.max(...rounds), median: median(rounds) };
}

async function measure(size: number): Promise<Row[]> {
  const body = makeBody(size);
  const verifier = new Webhook(SECRET);
  const seconds = Math.floor(Date.now() / 1000);
  const headers = {
    "webhook-id": "msg_2Lf5nKqXQ1",
    "webhook-timestamp": String(seconds),
    "webhook-signature": verifier.sign("msg_2Lf5nKqXQ1", new Date(seconds * 1000), body),
  };
  const runPeer = (): unknown => verifier.verify(body, headers);
  const runOurs = (): Promise<unknown> => verifyManagedAgentWebhook(body, headers, SECRET);
  // Both must accept the delivery, or the figures mean nothing.
  const expected = JSON.stringify(runPeer());
  if (JSON.stringify(await runOurs()) !== expected) throw new Error("Results differ");

  await opsPerSecond(runPeer, 1);
  await opsPerSecond(runOurs, 1);
  const peerRounds: number[] = [];
  const seqRounds: number[] = [];
  const parRounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    peerRounds.push(await opsPerSecond(runPeer, 1));
    seqRounds.push(await opsPerSecond(runOurs, 1));
    parRounds.push(await opsPerSecond(runOurs, 16));
  }
  const label = size >= 1024 * 1024 ? `${size / 1024 / 1024} MiB` : `${size / 1024} KiB`;
  const peer = figure(peerRounds);
  return [
    { body: label, mode: "sequential", peer, ours: figure(seqRounds) },
    { body: label, mode: "16 in flight", peer, ours: figure(parRounds) },
  ];
}

/** Runs the benchmark and returns its rows (used by `bench/main.ts`). */
export async function runWebhooksBench(): Promise<Row[]> {
  const rows: Row[] = [];
  for (const size of [1024, 256 * 1024]) rows.push(...await measure(size));
  return rows;
}

if (import.meta.main) {
  const rows = await runWebhooksBench();
  const ops = (n: number): string => n.toFixed(0);
  const pair = (f: Figure): string => `${ops(f.best)} (${ops(f.median)})`;
  console.log(
    `webhook verification (verify + parse), ops/s, best round (median) of ${ROUNDS} rounds`,
  );
  console.log(
    "body".padEnd(9) + "mode".padEnd(14) + "standardwebhooks".padStart(20) +
      "ours".padStart(20) + "ratio".padStart(16),
  );
  for (const row of rows) {
    const ratio = `${(row.ours.best / row.peer.best).toFixed(2)}x (${
      (row.ours.median / row.peer.median).toFixed(2)
    }x)`;
    console.log(
      row.body.padEnd(9) + row.mode.padEnd(14) + pair(row.peer).padStart(20) +
        pair(row.ours).padStart(20) + ratio.padStart(16),
    );
  }
  for (const [body, bound] of [["1 KiB", 1], ["256 KiB", 3]] as const) {
    const row = rows.find((r) => r.body === body && r.mode === "sequential")!;
    const best = row.ours.best / row.peer.best;
    const mid = row.ours.median / row.peer.median;
    console.log(
      `${body} sequential / standardwebhooks = ${best.toFixed(2)}x, ` +
        `median ${mid.toFixed(2)}x (target >= ${bound.toFixed(1)}x: ${
          best >= bound ? "ok" : "BELOW TARGET"
        })`,
    );
  }
}
