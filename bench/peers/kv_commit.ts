/**
 * The limit of the write benchmark: a bare `Deno.serve` that reads the request body and stores
 * it with one Deno KV atomic commit per request, then answers 201 with a small JSON body.
 *
 * Run: `deno run --allow-net --allow-read --allow-write bench/peers/kv_commit.ts PORT KV_PATH`
 *
 * @module
 */
import { listenOptions, stopOnSignal } from "./_listen.ts";

const path = Deno.args[1];
if (!path) throw new TypeError("The second argument must be the Deno KV file path");
const kv = await Deno.openKv(path);
const json = { "content-type": "application/json" };
const created: ResponseInit = { status: 201, headers: json };
const ok: ResponseInit = { headers: json };

const server = Deno.serve(listenOptions(), async (request) => {
  if (request.method !== "POST") return new Response('{"ok":true}', ok);
  const body = new Uint8Array(await request.arrayBuffer());
  const id = crypto.randomUUID();
  const result = await kv.atomic().check({ key: ["bench", id], versionstamp: null })
    .set(["bench", id], body).commit();
  if (!result.ok) return new Response('{"error":"conflict"}', { status: 409, headers: json });
  return new Response(JSON.stringify({ id }), created);
});
stopOnSignal(server, () => kv.close());
