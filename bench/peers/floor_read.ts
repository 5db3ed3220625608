/**
 * The floor of the read benchmarks: `Deno.serve` doing only the HTTP work every `/v1/*` read
 * must do, and nothing of its own. It reads the URL and the six request headers the rules look at
 * and answers a fixed JSON body with the four headers the contract puts on every answer
 * (`content-type`, `x-content-type-options`, the echoed `x-interface-version` and
 * `x-correlation-id`). No authentication, no checks, no log line: whatever `serve` costs beyond
 * this is the service's own code.
 *
 * Run: `deno run --allow-net bench/peers/floor_read.ts PORT`
 *
 * @module
 */
import { listenOptions, stopOnSignal } from "./_listen.ts";

const body = JSON.stringify({ ok: true, interfaceVersion: "2026-07-23" });

/** The request headers the service's rules look at. */
const NAMES = [
  "authorization",
  "x-interface-version",
  "x-correlation-id",
  "x-deadline",
  "idempotency-key",
  "cookie",
];

const server = Deno.serve(listenOptions(), (request) => {
  const headers = request.headers;
  let seen = request.url.length;
  for (const name of NAMES) seen += headers.get(name)?.length ?? 0;
  if (seen === 0) return new Response(null, { status: 400 });
  return new Response(body, {
    headers: {
      "content-type": "application/json",
      "x-content-type-options": "nosniff",
      "x-interface-version": headers.get("x-interface-version") ?? "",
      "x-correlation-id": headers.get("x-correlation-id") ?? "",
    },
  });
});
stopOnSignal(server);
