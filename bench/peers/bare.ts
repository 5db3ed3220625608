/**
 * The limit of the read benchmarks: a bare `Deno.serve` answering every request with one fixed
 * JSON body. Nothing is read from the request, so whatever a real service does costs against it.
 *
 * Run: `deno run --allow-net bench/peers/bare.ts PORT`
 *
 * @module
 */
import { listenOptions, stopOnSignal } from "./_listen.ts";

const body = JSON.stringify({ ok: true, interfaceVersion: "2026-07-23" });
const init: ResponseInit = { headers: { "content-type": "application/json" } };

const server = Deno.serve(listenOptions(), () => new Response(body, init));
stopOnSignal(server);
