/**
 * The provider's own API through the gateway (`/provider`) against the same calls straight to the
 * fake provider, with the vendor's SDK as the client both ways:
 *
 * - **stream throughput**: a session's turn of `--events N` agent messages (made by the fake as
 *   fast as it can) read with `client.beta.sessions.events.stream` until its idle event, events per
 *   second from the message that started the turn; the gateway's stream comes from the run's
 *   native log (its tail reads the provider's stream, appends both logs to Deno KV, hands the
 *   entries to the hub), the direct one straight from the fake. Target: through the gateway at
 *   least 0.8× direct. For context, the same with the fake pacing its messages 1 ms apart (still
 *   far faster than a model writes), a turn of a quarter as many.
 * - **session create**: `client.beta.sessions.create` one at a time, the two paths alternating in
 *   rounds; the difference of the medians is what the gateway adds (its rules, the run policy, the
 *   slot reservation, the run record and audit entry in Deno KV). Sessions start without a turn
 *   and so hold an active-run slot until their first: each is deleted right after its create
 *   (untimed), or the bootstrap's quota would run out. Target: at most 5 ms added at p50.
 *
 * - **the durable floor** of the stream (context for the target): the same turn read through a
 *   relay that does only what any gateway serving a durable log must do, in the cheapest way
 *   Deno KV allows: it reads the provider's stream and commits each chunk's frames (their raw
 *   text, one key per event, as many per commit as KV takes) before passing the chunk on. No
 *   parsing, no mapping, no dedupe index, no second log. What the gateway does beyond that is
 *   ours; the floor's own distance from direct is what durability costs on this machine's disk.
 *
 * Everything runs in this process (the fake provider, the gateway on `Deno.serve` with Deno KV in a
 * temp file, the relay, the SDK clients), as `runs_bench.ts` does. Run: `deno run -A bench/native_bench.ts
 * [--events N] [--creates N] [--rounds N] [--quick]`.
 *
 * @module
 */
import Vendor from "@anthropic-ai/sdk";
import { completeFrames } from "./_complete_frames.ts";
import { startBenchGateway } from "./_gateway.ts";

type Client = InstanceType<typeof Vendor>;

function flag(args: string[], name: string, fallback: number): number {
  const index = args.indexOf(`--${name}`);
  return index === -1 ? fallback : Number(args[index + 1]);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** The result of {@linkcode runNativeBench}. */
export interface NativeBenchResult {
  /** Events per turn. */
  events: number;
  /** Events per second read straight from the fake, median of the rounds. */
  directEventsPerSecond: number;
  /** Events per second read through the gateway, median of the rounds. */
  gatewayEventsPerSecond: number;
  /** Events per second read through the durable relay (the floor), median of the rounds. */
  floorEventsPerSecond: number;
  /** Creates timed per path. */
  creates: number;
  /** Median create straight to the fake, ms. */
  directCreateMs: number;
  /** Median create through the gateway, ms. */
  gatewayCreateMs: number;
  /** Paced turns (context): events per second direct and through the gateway. */
  paced: { events: number; direct: number; gateway: number };
  /**
   * Bursts made while the gateway's tail already reads the provider's stream (context): events
   * per second from the fake making the first to the client reading the last, medians.
   */
  streamed: { direct: number; gateway: number };
}

/** The provider's `*-version` and `*-beta` headers under the fake's names (`provider-…`). */
function providerHeaders(init: HeadersInit | undefined): Headers {
  const headers = new Headers(init);
  for (const [name, value] of [...headers]) {
    const match = /^[a-z]+-(version|beta)$/.exec(name);
    if (match !== null && !name.startsWith("provider-")) {
      headers.delete(name);
      headers.set(`provider-${match[1]}`, value);
    }
  }
  return headers;
}

/** Frames per commit of the durable relay: inside KV's 1,000 mutations and 800 KiB. */
const RELAY_COMMIT = 900;

/**
 * The durable floor: a relay in front of the fake that passes every request on and, on a
 * session's event stream, commits each chunk's complete frames to Deno KV (raw text, one key per
 * frame) before passing the chunk on. While a commit is in flight the next chunks wait in the
 * stream, so the commits group themselves as the gateway's appends do.
 */
async function startDurableRelay(
  upstream: string,
): Promise<{ url: string; close(): Promise<void> }> {
  const path = await Deno.makeTempFile({ prefix: "native-bench-floor-" });
  const kv = await Deno.openKv(path);
  let streams = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    const response = await fetch(new URL(url.pathname + url.search, upstream), {
      method: request.method,
      headers: providerHeaders(request.headers),
      body: request.body,
    });
    if (!url.pathname.endsWith("/events/stream") || response.body === null) return response;
    const log = ++streams;
    const reader = response.body.getReader();
    const encoder = new TextEncoder();
    let seq = 0;
    // Complete frames read and not yet committed; the commit under way, if any.
    let pending = "";
    let committing: Promise<void> | undefined;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        // Commits whatever came while the last commit ran, until nothing is left.
        const flush = async (): Promise<void> => {
          while (pending !== "") {
            const complete = pending;
            pending = "";
            const frames = complete.split("\n\n");
            frames.pop();
            for (let i = 0; i < frames.length; i += RELAY_COMMIT) {
              const operation = kv.atomic();
              for (const frame of frames.slice(i, i + RELAY_COMMIT)) {
                operation.set(["frame", log, ++seq], frame);
              }
              if (!(await operation.commit()).ok) throw new Error("the relay's commit failed");
            }
            controller.enqueue(encoder.encode(complete));
          }
          committing = undefined;
        };
        (async () => {
          for await (const complete of completeFrames(reader)) {
            pending += complete;
            committing ??= flush();
          }
          await committing;
          controller.close();
        })().catch((error) => controller.error(error));
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    async close() {
      await server.shutdown();
      kv.close();
      await Deno.remove(path);
    },
  };
}

/** Runs the benchmark. */
export async function runNativeBench(
  options: { events?: number; creates?: number; rounds?: number } = {},
): Promise<NativeBenchResult> {
  const events = options.events ?? 2_000;
  const creates = options.creates ?? 300;
  const rounds = options.rounds ?? 5;
  const gateway = await startBenchGateway({ prefix: "native-bench-" });
  const { fake, agentId, environmentId } = gateway;
  const state = fake.managedAgents!;
  const burst = () =>
    Array.from({ length: events }, (_, i) => ({
      type: "agent.message",
      content: [{ type: "text", text: `message ${i + 1} of the turn` }],
    }));
  const pacedEvents = Math.max(1, Math.floor(events / 4));
  const paced = () =>
    Array.from({ length: pacedEvents }, (_, i) => [
      { delayMs: 1 },
      { type: "agent.message", content: [{ type: "text", text: `message ${i + 1}` }] },
    ]).flat();
  // A burst 300 ms into the turn: the gateway's tail reads it from the provider's stream.
  const streamedBurst = () => [{ delayMs: 300 }, ...burst()];
  // When the fake made the turn's first agent.message (the streamed bursts' start).
  let firstMade = 0;
  state.onEmit = (_session, event) => {
    if (event.type === "agent.message" && firstMade === 0) firstMade = performance.now();
  };
  state.script = burst;
  // The fake provider reads `provider-version` and `provider-beta`; the SDK names them after its
  // brand. Straight to the fake, a fetch renames them (the gateway reads either).
  const direct: Client = new Vendor({
    apiKey: fake.apiKey,
    baseURL: fake.baseUrl,
    maxRetries: 0,
    fetch: (input: string | URL | Request, init?: RequestInit) =>
      fetch(input, { ...init, headers: providerHeaders(init?.headers) }),
  } as never);
  const relay = await startDurableRelay(fake.baseUrl);
  const floor: Client = new Vendor({ apiKey: fake.apiKey, baseURL: relay.url, maxRetries: 0 });
  const through: Client = new Vendor({
    apiKey: gateway.token,
    baseURL: `${gateway.url}/provider`,
    maxRetries: 0,
  });

  /**
   * One turn read through `client`'s stream: events per second from the message that started
   * the turn (`fromFirstMade`: from the fake making the turn's first message) to the last.
   */
  async function turn(client: Client, expected = events, fromFirstMade = false): Promise<number> {
    const session = await client.beta.sessions.create(
      { agent: agentId, environment_id: environmentId } as never,
    );
    const stream = await client.beta.sessions.events.stream(session.id);
    // The stream is open when its headers came; the turn starts now.
    const began = performance.now();
    firstMade = 0;
    await client.beta.sessions.events.send(session.id, {
      events: [{ type: "user.message", content: [{ type: "text", text: "go" }] }],
    } as never);
    let count = 0;
    for await (const event of stream) {
      if ((event as { type: string }).type === "agent.message") count++;
      if ((event as { type: string }).type === "session.status_idle") break;
    }
    const seconds = (performance.now() - (fromFirstMade ? firstMade : began)) / 1000;
    if (count !== expected) throw new Error(`read ${count} of ${expected} messages`);
    return count / seconds;
  }

  /** One timed create; the session is deleted afterwards, untimed (an idle one holds a slot). */
  async function create(client: Client): Promise<number> {
    const began = performance.now();
    const session = await client.beta.sessions.create(
      { agent: agentId, environment_id: environmentId } as never,
    );
    const took = performance.now() - began;
    await client.beta.sessions.delete(session.id);
    return took;
  }

  const directRates: number[] = [];
  const gatewayRates: number[] = [];
  const floorRates: number[] = [];
  const directTimes: number[] = [];
  const gatewayTimes: number[] = [];
  const pacedRates = { direct: [] as number[], gateway: [] as number[] };
  const streamedRates = { direct: [] as number[], gateway: [] as number[] };
  try {
    // Warm-up, not counted: the first turn and creates through cold code.
    await turn(direct);
    await turn(through);
    await turn(floor);
    for (let i = 0; i < 20; i++) {
      await create(direct);
      await create(through);
    }
    const perRound = Math.max(1, Math.ceil(creates / rounds));
    for (let round = 0; round < rounds; round++) {
      // Alternate which path goes first, so neither always follows the other's leftovers.
      const order = round % 2 === 0 ? [direct, through] : [through, direct];
      for (const client of order) {
        (client === direct ? directRates : gatewayRates).push(await turn(client));
      }
      floorRates.push(await turn(floor));
      for (const client of order) {
        const times = client === direct ? directTimes : gatewayTimes;
        for (let i = 0; i < perRound; i++) times.push(await create(client));
      }
    }
    state.script = paced;
    for (let round = 0; round < 2; round++) {
      pacedRates.direct.push(await turn(direct, pacedEvents));
      pacedRates.gateway.push(await turn(through, pacedEvents));
    }
    state.script = streamedBurst;
    for (let round = 0; round < 3; round++) {
      streamedRates.direct.push(await turn(direct, events, true));
      streamedRates.gateway.push(await turn(through, events, true));
    }
  } finally {
    await relay.close();
    await gateway.close();
  }
  return {
    events,
    directEventsPerSecond: median(directRates),
    gatewayEventsPerSecond: median(gatewayRates),
    floorEventsPerSecond: median(floorRates),
    creates: directTimes.length,
    directCreateMs: median(directTimes),
    gatewayCreateMs: median(gatewayTimes),
    paced: {
      events: pacedEvents,
      direct: median(pacedRates.direct),
      gateway: median(pacedRates.gateway),
    },
    streamed: { direct: median(streamedRates.direct), gateway: median(streamedRates.gateway) },
  };
}

if (import.meta.main) {
  const quick = Deno.args.includes("--quick") || Deno.env.get("BENCH_QUICK") === "1";
  const result = await runNativeBench({
    events: flag(Deno.args, "events", quick ? 500 : 2_000),
    creates: flag(Deno.args, "creates", quick ? 40 : 300),
    rounds: flag(Deno.args, "rounds", quick ? 2 : 5),
  });
  const ratio = result.gatewayEventsPerSecond / result.directEventsPerSecond;
  const added = result.gatewayCreateMs - result.directCreateMs;
  const rate = (value: number) => Math.round(value).toLocaleString("en-US");
  console.log(
    `provider API, a turn of ${result.events} messages with the vendor SDK's stream: direct ` +
      `${rate(result.directEventsPerSecond)} events/s, through /provider ` +
      `${rate(result.gatewayEventsPerSecond)} events/s (medians)`,
  );
  console.log(
    `provider API stream through the gateway / direct = ${ratio.toFixed(2)}x ` +
      `(target >= 0.8x: ${ratio >= 0.8 ? "met" : "missed"})`,
  );
  console.log(
    `context, the durable floor (a relay committing each chunk's frames to Deno KV before ` +
      `passing them on): ${rate(result.floorEventsPerSecond)} events/s, ` +
      `${(result.floorEventsPerSecond / result.directEventsPerSecond).toFixed(2)}x direct; the ` +
      `gateway at ` +
      `${(result.gatewayEventsPerSecond / result.floorEventsPerSecond).toFixed(2)}x the floor`,
  );
  console.log(
    `context: a turn of ${result.paced.events} messages paced 1 ms apart: direct ` +
      `${rate(result.paced.direct)} events/s, through /provider ${rate(result.paced.gateway)} ` +
      `events/s (${(result.paced.gateway / result.paced.direct).toFixed(2)}x)`,
  );
  console.log(
    `context: a turn of ${result.events} messages made at once 300 ms into the turn (the ` +
      `gateway's tail reads them from the provider's stream): direct ` +
      `${rate(result.streamed.direct)} events/s, through /provider ` +
      `${rate(result.streamed.gateway)} events/s ` +
      `(${(result.streamed.gateway / result.streamed.direct).toFixed(2)}x; medians of 3, from ` +
      `the first message made)`,
  );
  console.log(
    `provider API, ${result.creates} session creates per path: direct ` +
      `${result.directCreateMs.toFixed(2)} ms, through /provider ` +
      `${result.gatewayCreateMs.toFixed(2)} ms (medians); the gateway adds ${added.toFixed(2)} ms`,
  );
  console.log(
    `provider API create: added p50 / 5 ms = ${(added / 5).toFixed(2)}x ` +
      `(target <= 1.0x: ${added <= 5 ? "met" : "missed"}, ${added.toFixed(2)} ms added)`,
  );
}
