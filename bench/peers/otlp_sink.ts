/**
 * An OTLP/HTTP receiver that accepts every export and keeps nothing: the collector of the
 * tracing benchmark, so that "tracing on" pays for building and sending its spans and nothing
 * else.
 *
 * Run: `deno run --allow-net bench/peers/otlp_sink.ts PORT`
 *
 * @module
 */
import { listenOptions, stopOnSignal } from "./_listen.ts";

const server = Deno.serve(listenOptions(), async (request) => {
  await request.body?.cancel();
  return new Response(new URL(request.url).pathname === "/healthz" ? "ok" : "{}");
});
stopOnSignal(server);
