/**
 * The peer a user would write instead of the service: Hono on `Deno.serve` with its
 * `bearer-auth` middleware checking one static token, answering `GET /v1/runtime` with JSON.
 *
 * Run: `BENCH_BEARER=... deno run --allow-net --allow-env bench/peers/hono_bearer.ts PORT`
 *
 * @module
 */
import { Hono } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { listenOptions, stopOnSignal } from "./_listen.ts";

const token = Deno.env.get("BENCH_BEARER");
if (!token) throw new Error("BENCH_BEARER is required");

const app = new Hono();
app.get("/healthz", (c) => c.json({ ok: true }));
app.use("/v1/*", bearerAuth({ token }));
app.get("/v1/runtime", (c) => c.json({ ok: true, interfaceVersion: "2026-07-23" }));

const server = Deno.serve(listenOptions(), app.fetch);
stopOnSignal(server);
