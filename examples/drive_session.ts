/**
 * Start a managed-agents run and steer it to its end: allow read-only tools, deny the rest,
 * answer a custom tool, print the agent's text. The driver reconnects after dropped streams and
 * never handles an event or answers a tool call twice.
 *
 * ```sh
 * PROVIDER_API_KEY=… PROVIDER_BASE_URL=https://… PROVIDER_AGENT_ID=agent_… \
 * PROVIDER_ENVIRONMENT_ID=env_… deno run --allow-net --allow-env examples/drive_session.ts "Summarise the repo"
 * ```
 *
 * @module
 */
import { driveManagedAgentSession, ProviderManagedAgentClient } from "../client/mod.ts";

function required(name: string): string {
  const value = Deno.env.get(name);
  if (!value) {
    console.error(`Set ${name}`);
    Deno.exit(2);
  }
  return value;
}

const client = new ProviderManagedAgentClient({
  apiKey: required("PROVIDER_API_KEY"),
  baseUrl: required("PROVIDER_BASE_URL"),
  agentId: required("PROVIDER_AGENT_ID"),
  environmentId: required("PROVIDER_ENVIRONMENT_ID"),
});

const controller = new AbortController();
Deno.addSignalListener("SIGINT", () => controller.abort());

const run = await client.startRun({ input: Deno.args[0] ?? "Say hello" });
console.error(`session ${run.runId}`);

const result = await driveManagedAgentSession(client, run.runId, {
  onMessage: (text) => console.log(text),
  onToolConfirmation: ({ name }) =>
    ["read", "glob", "grep"].includes(name)
      ? { result: "allow" }
      : { result: "deny", denyMessage: `${name} is not allowed here` },
  onCustomTool: ({ name }) => ({
    content: [{ type: "text", text: `no handler for ${name}` }],
    isError: true,
  }),
  onError: (error) => console.error(`driver: ${error.reason}: ${error.message}`),
}, { signal: controller.signal });
console.error(`ended: ${result.outcome}`);
