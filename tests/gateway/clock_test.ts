/**
 * The server's one clock: the times a server records outside the run gateway come from its `now`
 * option (`services.now`), not from the wall clock.
 */
import assert from "node:assert/strict";
import { signManagedAgentWebhook } from "../../client/mod.ts";
import { startGateway } from "./_harness.ts";

Deno.test("clock: a webhook delivery and its audit entry carry the server's time", async () => {
  const signing = `whsec_${btoa(crypto.randomUUID())}`;
  // Stopped a minute behind the wall clock, so a time read from Date.now() would differ.
  const frozen = Date.now() - 60_000;
  const gateway = await startGateway({
    webhookSecrets: [signing],
    serverOptions: { now: () => frozen },
  });
  try {
    const body = JSON.stringify({
      type: "event",
      id: `wevt_${crypto.randomUUID()}`,
      created_at: new Date().toISOString(),
      data: { type: "agent.created", id: "agent_1", organization_id: "o", workspace_id: "w" },
    });
    const response = await gateway.server.handler(
      new Request("http://127.0.0.1/webhooks/provider", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...await signManagedAgentWebhook(body, signing),
        },
        body,
      }),
    );
    assert.equal(response.status, 204, await response.text());
    const audit = await gateway.request("GET", "/v1/audit?action=webhook.accepted&limit=10");
    assert.equal(audit.status, 200, audit.text);
    assert.deepEqual(
      audit.json.entries.map((entry: { at: string }) => entry.at),
      [new Date(frozen).toISOString()],
    );
  } finally {
    await gateway.close();
  }
});
