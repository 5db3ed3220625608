/**
 * Receive provider webhooks: verify each delivery against its raw body, dedupe retries by the
 * event id, then fetch the affected resource for its current state (payloads are thin).
 *
 * ```sh
 * PROVIDER_WEBHOOK_SIGNING_KEY=whsec_… deno run --allow-net=127.0.0.1:8787 --allow-env \
 *   examples/webhook_receiver.ts
 * ```
 *
 * @module
 */
import { verifyManagedAgentWebhook, WebhookVerificationError } from "../client/mod.ts";

const secret = Deno.env.get("PROVIDER_WEBHOOK_SIGNING_KEY");
if (!secret) {
  console.error("Set PROVIDER_WEBHOOK_SIGNING_KEY to the endpoint's signing secret");
  Deno.exit(2);
}

// Deliveries are retried with the same id; remember recent ids (bounded) to handle each once.
const recent = new Set<string>();
const RECENT_LIMIT = 10_000;

Deno.serve({ hostname: "127.0.0.1", port: 8787 }, async (request) => {
  if (request.method !== "POST") return new Response(null, { status: 405 });
  try {
    // The raw text, never JSON.parse + JSON.stringify: re-serialized JSON breaks the signature.
    const event = await verifyManagedAgentWebhook(await request.text(), request.headers, secret);
    if (recent.has(event.id)) return new Response(null, { status: 204 });
    recent.add(event.id);
    if (recent.size > RECENT_LIMIT) recent.delete(recent.values().next().value!);
    console.log(JSON.stringify({ type: event.data.type, id: event.data.id }));
    return new Response(null, { status: 204 });
  } catch (error) {
    if (error instanceof WebhookVerificationError) {
      console.error(`rejected delivery: ${error.reason}`);
      return new Response(null, { status: 400 });
    }
    throw error;
  }
});
