/**
 * Running `wrk` (Debian's package) for the server benchmarks: the install check, the Lua script
 * that gives every request fresh shared headers, CPU pinning with `taskset`, and the parser of
 * wrk's `--latency` report.
 *
 * @module
 */

/** What one wrk run measured. */
export interface WrkResult {
  /** Requests completed. */
  requests: number;
  /** Requests per second, as wrk reports it. */
  rps: number;
  /** Median latency in milliseconds. */
  p50Ms: number;
  /** 99th percentile latency in milliseconds. */
  p99Ms: number;
  /** Responses outside 2xx and 3xx. */
  non2xx: number;
  /** Socket errors of every kind (connect, read, write, timeout). */
  socketErrors: number;
}

const TIME_UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function parseDuration(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m|h)$/.exec(text.trim());
  if (!match) throw new Error(`Unreadable wrk latency ${JSON.stringify(text)}`);
  return Number(match[1]) * TIME_UNITS[match[2]];
}

/**
 * Parses the report `wrk --latency` prints: requests per second, p50 and p99 latency, non-2xx
 * responses and socket errors.
 *
 * @example
 * ```ts
 * import { parseWrkOutput } from "./_wrk.ts";
 * const result = parseWrkOutput([
 *   "  Latency Distribution",
 *   "     50%  250.00us",
 *   "     99%    5.80ms",
 *   "  22831 requests in 10.10s, 2.45MB read",
 *   "Requests/sec:   2260.52",
 * ].join("\n"));
 * console.log(result.rps, result.p50Ms, result.p99Ms); // 2260.52 0.25 5.8
 * ```
 */
export function parseWrkOutput(text: string): WrkResult {
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(text);
  const p50 = /^\s+50%\s+(\S+)/m.exec(text);
  const p99 = /^\s+99%\s+(\S+)/m.exec(text);
  const requests = /^\s+(\d+) requests in /m.exec(text);
  if (!rps || !p50 || !p99 || !requests) {
    throw new Error(`Unreadable wrk report:\n${text.trim()}`);
  }
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(text);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  return {
    requests: Number(requests[1]),
    rps: Number(rps[1]),
    p50Ms: parseDuration(p50[1]),
    p99Ms: parseDuration(p99[1]),
    non2xx: non2xx ? Number(non2xx[1]) : 0,
    socketErrors: socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
  };
}

function onPath(program: string): boolean {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (!dir) continue;
    try {
      if (Deno.statSync(`${dir}/${program}`).isFile) return true;
    } catch {
      // Not in this directory.
    }
  }
  return false;
}

async function succeeds(command: string, args: string[]): Promise<boolean> {
  try {
    const { success } = await new Deno.Command(command, {
      args,
      env: { DEBIAN_FRONTEND: "noninteractive" },
      stdout: "null",
      stderr: "inherit",
    }).output();
    return success;
  } catch {
    return false;
  }
}

let installed: Promise<void> | undefined;

/**
 * Makes sure `wrk` is on the PATH. When it is missing, it says so on stderr and runs
 * `apt-get install -y wrk` once (after `apt-get update` if the first try fails); when that
 * fails too, it rejects with the command to run by hand.
 *
 * @example
 * ```ts ignore
 * import { ensureWrk } from "./_wrk.ts";
 * await ensureWrk();
 * ```
 */
export function ensureWrk(): Promise<void> {
  installed ??= (async () => {
    if (onPath("wrk")) return;
    console.error("wrk is not installed; installing it from Debian: apt-get install -y wrk");
    const install = () => succeeds("apt-get", ["install", "-y", "-qq", "wrk"]);
    let ok = await install();
    if (!ok) ok = (await succeeds("apt-get", ["update", "-qq"])) && await install();
    if (!ok || !onPath("wrk")) {
      throw new Error("wrk is required: install it with `apt-get install -y wrk` and run again");
    }
  })();
  return installed;
}

/**
 * The CPU cores to pin to: the server on one, wrk (or the measuring client) on another, when
 * `taskset` exists and the machine has at least two cores; otherwise nothing is pinned.
 *
 * @example
 * ```ts
 * import { pinning } from "./_wrk.ts";
 * console.log(pinning().server); // ["taskset", "-c", "0"] on a 2-core Linux machine
 * ```
 */
export function pinning(): { server: string[]; client: string[]; pinned: boolean } {
  const pinned = Deno.build.os === "linux" && navigator.hardwareConcurrency >= 2 &&
    onPath("taskset");
  return pinned
    ? { server: ["taskset", "-c", "0"], client: ["taskset", "-c", "1"], pinned }
    : { server: [], client: [], pinned };
}

/**
 * The wrk Lua script. Every request carries the shared headers with a fresh UUID
 * `x-correlation-id` and an `x-deadline` two minutes ahead; the bearer comes from the
 * `BENCH_BEARER` environment variable (never an argument). With `BENCH_MODE=issue` each request
 * is a `POST` issuing a new principal, with a fresh `idempotency-key` and `principalId`.
 */
export const WRK_SCRIPT: string = `
local bearer = os.getenv("BENCH_BEARER") or ""
local mode = os.getenv("BENCH_MODE") or "read"
local auth = "Bearer " .. bearer
local last_second, deadline, expires = -1, "", ""

function init(args)
  math.randomseed(os.time() + math.floor(os.clock() * 1000000) + (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % 1000003)
end

local function hex(digits)
  return string.format("%0" .. digits .. "x", math.random(0, 16 ^ digits - 1))
end

local function uuid()
  return hex(8) .. "-" .. hex(4) .. "-4" .. hex(3) .. "-" ..
    string.format("%x", math.random(8, 11)) .. hex(3) .. "-" .. hex(4) .. hex(8)
end

local function refresh()
  local now = os.time()
  if now ~= last_second then
    last_second = now
    deadline = os.date("!%Y-%m-%dT%H:%M:%SZ", now + 120)
    expires = os.date("!%Y-%m-%dT%H:%M:%SZ", now + 86400)
  end
end

request = function()
  refresh()
  local headers = {
    ["authorization"] = auth,
    ["x-interface-version"] = "2026-07-23",
    ["x-correlation-id"] = uuid(),
    ["x-deadline"] = deadline,
  }
  if mode == "issue" then
    headers["idempotency-key"] = uuid()
    headers["content-type"] = "application/json"
    local body = '{"principalId":"' .. uuid() .. '","capabilities":["session:read"],"expiresAt":"' .. expires .. '"}'
    return wrk.format("POST", nil, headers, body)
  end
  return wrk.format("GET", nil, headers)
end
`;

/** Options of {@linkcode runWrk}. */
export interface RunWrkOptions {
  /** Target URL, path included. */
  url: string;
  /** Bearer sent in `Authorization`, passed to wrk through its environment. */
  bearer: string;
  /** `read` sends `GET`s, `issue` sends principal issuances. */
  mode: "read" | "issue";
  /** Open connections (default 50). */
  connections?: number;
  /** Duration in seconds. */
  seconds: number;
  /** Directory to write the Lua script in. */
  workDir: string;
}

/**
 * Runs wrk once (one thread, pinned to the client core) and parses its report.
 *
 * @example
 * ```ts ignore
 * import { runWrk } from "./_wrk.ts";
 * const result = await runWrk({
 *   url: "http://127.0.0.1:8000/v1/runtime",
 *   bearer: "art_...",
 *   mode: "read",
 *   seconds: 5,
 *   workDir: "/tmp",
 * });
 * console.log(result.rps);
 * ```
 */
export async function runWrk(options: RunWrkOptions): Promise<WrkResult> {
  await ensureWrk();
  const script = `${options.workDir}/wrk_shared_headers.lua`;
  await Deno.writeTextFile(script, WRK_SCRIPT);
  const argv = [
    ...pinning().client,
    "wrk",
    "-t1",
    `-c${options.connections ?? 50}`,
    `-d${options.seconds}s`,
    "--timeout",
    "10s",
    "--latency",
    "-s",
    script,
    options.url,
  ];
  const output = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    env: { BENCH_BEARER: options.bearer, BENCH_MODE: options.mode },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  if (!output.success) {
    throw new Error(`wrk failed: ${new TextDecoder().decode(output.stderr).trim() || text}`);
  }
  return parseWrkOutput(text);
}
