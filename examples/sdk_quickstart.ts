/**
 * Issue a read-only principal, use its bearer, and revoke it.
 *
 * Start the service first (`npx -y deno@2.9.6 task start`), then:
 *
 * ```sh
 * set -a; . ~/.config/automation-runtime/bootstrap.env; set +a
 * AUTOMATION_RUNTIME_TOKEN="$AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN" \
 *   deno run --allow-net --allow-env examples/sdk_quickstart.ts
 * ```
 *
 * @module
 */
import { RuntimeServiceClient, RuntimeServiceError } from "../sdk/mod.ts";

const baseUrl = Deno.env.get("AUTOMATION_RUNTIME_URL") ?? "http://127.0.0.1:7777";
const token = Deno.env.get("AUTOMATION_RUNTIME_TOKEN");
if (!token) {
  console.error("Set AUTOMATION_RUNTIME_TOKEN (see the comment at the top of this file)");
  Deno.exit(2);
}

const admin = new RuntimeServiceClient({ baseUrl, token });
console.log("service:", await admin.health());
console.log("caller:", await admin.runtime());

// A fresh idempotency key per run: the SDK resends it on this call's own retries, so a lost answer
// is replayed (bearer included), never issued twice. A key reused on a later run would meet a new
// expiresAt and principalId and answer 422 idempotencyConflict.
const issued = await admin.createPrincipal(
  { capabilities: ["session:read"], expiresAt: new Date(Date.now() + 60 * 60 * 1000) },
  { idempotencyKey: crypto.randomUUID() },
);
console.log("issued:", issued.principalId, "expires", issued.expiresAt);

const reader = new RuntimeServiceClient({ baseUrl, token: issued.bearer });
console.log("as the new principal:", await reader.runtime());

await admin.revokePrincipal(issued.principalId);
try {
  await reader.runtime();
} catch (error) {
  if (!(error instanceof RuntimeServiceError)) throw error;
  console.log("after revocation:", error.status, error.code); // 401 authenticationFailed
}
