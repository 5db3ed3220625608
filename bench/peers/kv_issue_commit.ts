/**
 * The floor of the issuance benchmark: `Deno.serve` doing, per request, the Deno KV write that
 * one issuance needs and nothing else. It reads the JSON body and commits one atomic operation
 * shaped like the service's: three absence checks (idempotency key, principal id, bearer digest)
 * and four sets (the principal, its digest index, the idempotency record and its purge index, the
 * last two with `expireIn`). Values are of the same size and kind. No authentication, no
 * hashing, no log line, one commit per request (the service groups them).
 *
 * Run: `deno run --allow-net --allow-read --allow-write bench/peers/kv_issue_commit.ts PORT PATH`
 *
 * @module
 */
import { listenOptions, stopOnSignal } from "./_listen.ts";

const path = Deno.args[1];
if (!path) throw new TypeError("The second argument must be the Deno KV file path");
const kv = await Deno.openKv(path);
const root = ["automation-runtime", "0123456789abcdef0123456789abcdef"];
const json = { "content-type": "application/json" };
const DAY_MS = 86_400_000;

function hex(bytes: number): string {
  let text = "";
  for (const byte of crypto.getRandomValues(new Uint8Array(bytes))) {
    text += byte.toString(16).padStart(2, "0");
  }
  return text;
}

const server = Deno.serve(listenOptions(), async (request) => {
  if (request.method !== "POST") return new Response('{"ok":true}', { headers: json });
  const body = await request.json() as { principalId: string; expiresAt: string };
  const now = Date.now();
  const scope = hex(32);
  const digest = hex(32);
  const record = {
    principalId: body.principalId,
    bearerDigest: digest,
    capabilities: ["session:read"],
    expiresAt: body.expiresAt,
    issuerId: crypto.randomUUID(),
    createdAt: new Date(now).toISOString(),
    revokedAt: null,
    nonce: hex(16),
  };
  const answer = JSON.stringify({
    principalId: body.principalId,
    capabilities: record.capabilities,
    expiresAt: body.expiresAt,
  });
  const idKey = [...root, "principal", body.principalId];
  const digestKey = [...root, "digest", digest];
  const key = [...root, "idempotency", scope];
  const result = await kv.atomic()
    .check({ key, versionstamp: null })
    .check({ key: idKey, versionstamp: null })
    .check({ key: digestKey, versionstamp: null })
    .set(idKey, record)
    .set(digestKey, body.principalId)
    .set(key, {
      state: "done",
      token: "",
      requestDigest: hex(32),
      leaseUntil: now,
      expiresAt: now + DAY_MS,
      response: { status: 201, body: answer },
    }, { expireIn: DAY_MS })
    .set([...root, "idempotency-expiry", now + DAY_MS, scope], true, { expireIn: DAY_MS })
    .commit();
  if (!result.ok) return new Response('{"error":"conflict"}', { status: 409, headers: json });
  return new Response(answer, { status: 201, headers: json });
});
stopOnSignal(server, () => kv.close());
