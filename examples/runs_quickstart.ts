/**
 * Start a run of an agent through the runtime service, follow its state, and list your runs.
 * The service holds the provider key; this script only needs a principal with `session:read`
 * and `session:write`.
 *
 * Start the service with a provider key first (`automation-runtime provider init`, then
 * `deno task start`), issue a principal, then:
 *
 * ```sh
 * AUTOMATION_RUNTIME_TOKEN=art_... AGENT_ID=agent_... ENVIRONMENT_ID=env_... \
 *   deno run --allow-net --allow-env examples/runs_quickstart.ts
 * ```
 *
 * @module
 */
import { RuntimeServiceClient, RuntimeServiceError } from "../sdk/mod.ts";

const baseUrl = Deno.env.get("AUTOMATION_RUNTIME_URL") ?? "http://127.0.0.1:7777";
const token = Deno.env.get("AUTOMATION_RUNTIME_TOKEN");
if (!token) {
  console.error("Set AUTOMATION_RUNTIME_TOKEN to a bearer with session:read and session:write");
  Deno.exit(2);
}
const client = new RuntimeServiceClient({ baseUrl, token });

let run;
try {
  run = await client.runs.start(
    {
      input: "Write a haiku about idempotency keys",
      title: "haiku",
      metadata: {
        agent_id: Deno.env.get("AGENT_ID"),
        environment_id: Deno.env.get("ENVIRONMENT_ID"),
      },
    },
    // A fixed key would make rerunning this script replay the first start instead of a second.
    { idempotencyKey: crypto.randomUUID() },
  );
} catch (error) {
  if (!(error instanceof RuntimeServiceError)) throw error;
  // For example agentNotAllowed (403), runQuotaExceeded (429, see error.retryAfterMs) or
  // providerNotConfigured (503: the service has no provider key yet).
  console.error(`${error.code}: ${error.message}`);
  Deno.exit(1);
}
console.log("started", run.runId, run.state);

// Poll until the run stops (a later version streams its events instead).
const stopped = new Set(["requires_action", "completed", "failed", "cancelled"]);
const deadline = Date.now() + 5 * 60_000;
while (!stopped.has(run.state) && Date.now() < deadline) {
  await new Promise((resolve) => setTimeout(resolve, 2000));
  run = await client.runs.get(run.runId);
}
console.log("now", run.state, run.stopReason ?? "", run.usage ?? {});

for await (const past of client.runs.listAll({ limit: 20 })) {
  console.log(past.createdAt, past.runId, past.state, past.title ?? "");
}
