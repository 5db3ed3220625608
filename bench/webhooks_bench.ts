/**
 * Webhook verifications per second: `verifyManagedAgentWebhook` (WebCrypto HMAC-SHA256) against
 * `npm:standardwebhooks` (pure-JS SHA-256), both verifying and JSON-parsing the same signed
 * delivery in the same process. Rounds alternate between the two and the median round counts.
 *
 * Rows:
 * - `sequential`: one verification at a time (`await` each), the worst case for WebCrypto, whose
 *   every call pays a fixed hand-off to a worker thread.
 * - `16 in flight`: sixteen deliveries verified concurrently, as a server receiving deliveries
 *   does; the peer is synchronous, so its figure is its sequential one.
 *
 * Run: `deno run -A bench/webhooks_bench.ts` (`--quick` or `BENCH_QUICK=1` for a short run).
 * Targets: at least 1x at 1 KiB and 3x at 256 KiB (sequential rows).
 *
 * @module
 */
import { Webhook } from "standardwebhooks";
import { verifyManagedAgentWebhook } from "../client/managed_agents/webhooks.ts";

const SECRET = "whsec_" + btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
const QUICK = Deno.args.includes("--quick") || Deno.env.get("BENCH_QUICK") === "1";
const ROUNDS = Number(Deno.env.get("BENCH_ROUNDS") ?? (QUICK ? 3 : 7));
const ROUND_MS = Number(Deno.env.get("BENCH_ROUND_MS") ?? (QUICK ? 150 : 300));

/** A measured row of the table. */
interface Row {
  body: string;
  mode: string;
  peer: number;
  ours: number;
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
  return sorted[Math.floor(sorted.length / 2)];
}

async function measure(size: number): Promise<Row[]> {
  const body = makeBody(size);
  const peer = new Webhook(SECRET);
  const seconds = Math.floor(Date.now() / 1000);
  const headers = {
    "webhook-id": "msg_2Lf5nKqXQ1",
    "webhook-timestamp": String(seconds),
    "webhook-signature": peer.sign("msg_2Lf5nKqXQ1", new Date(seconds * 1000), body),
  };
  const runPeer = (): unknown => peer.verify(body, headers);
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
  const peerOps = median(peerRounds);
  return [
    { body: label, mode: "sequential", peer: peerOps, ours: median(seqRounds) },
    { body: label, mode: "16 in flight", peer: peerOps, ours: median(parRounds) },
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
  const format = (n: number): string => n.toFixed(0).padStart(10);
  console.log("webhook verification (verify + parse), ops/s, median of", ROUNDS, "rounds");
  console.log(
    "body".padEnd(9) + "mode".padEnd(14) + "standardwebhooks".padStart(17) + "ours".padStart(10) +
      "ratio".padStart(8),
  );
  for (const row of rows) {
    console.log(
      row.body.padEnd(9) + row.mode.padEnd(14) + format(row.peer).padStart(17) + format(row.ours) +
        `${(row.ours / row.peer).toFixed(2)}x`.padStart(8),
    );
  }
  for (const [body, bound] of [["1 KiB", 1], ["256 KiB", 3]] as const) {
    const row = rows.find((r) => r.body === body && r.mode === "sequential")!;
    const ratio = row.ours / row.peer;
    console.log(
      `target ${body} sequential >= ${bound}x: ${ratio.toFixed(2)}x ${
        ratio >= bound ? "met" : "missed"
      }`,
    );
  }
}
