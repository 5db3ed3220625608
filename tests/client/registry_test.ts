import assert from "node:assert/strict";
import {
  createProviderManagedAgentProviderModule,
  createProviderModule,
  declareCapabilities,
  type FetchLike,
  PROVIDER_CAPABILITY_DECLARATION,
  PROVIDER_RUNTIME_SUPPORT,
  ProviderApiClient,
  providerCapabilities,
  ProviderManagedAgentClient,
  type ProviderModule,
  ProviderRegistry,
  type ProviderTrace,
  RUNTIME_CAPABILITY_NAMES,
  type RuntimeClient,
} from "../../client/mod.ts";

interface Sent {
  url: string;
  headers: Headers;
  body: unknown;
  via: string;
}

/** A fetch that records requests and answers with a canned JSON body. */
function spyFetch(via: string, sent: Sent[]): FetchLike {
  return (input, init) => {
    const request = new Request(input, init);
    return request.text().then((text) => {
      sent.push({
        url: request.url,
        headers: request.headers,
        body: text === "" ? undefined : JSON.parse(text),
        via,
      });
      const answer = request.url.includes("/v1/agents/")
        ? { id: "agent_1", version: 1, name: "a" }
        : {
          id: "msg_1",
          type: "message",
          role: "assistant",
          model: "m",
          content: [{ type: "text", text: "ok" }],
          stop_reason: "end_turn",
          usage: {},
        };
      return new Response(JSON.stringify(answer), {
        headers: { "content-type": "application/json", "request-id": `req_${via}` },
      });
    });
  };
}

Deno.test("the registry's baseUrl, fetchImpl and onTrace replace the module's", async () => {
  const sent: Sent[] = [];
  const moduleTraces: ProviderTrace[] = [];
  const registryTraces: ProviderTrace[] = [];
  const module = createProviderModule({
    apiKey: "module-key",
    defaultModel: "model-of-module",
    defaultMaxTokens: 77,
    baseUrl: "http://module.invalid",
    fetchImpl: spyFetch("module", sent),
    onTrace: (trace) => moduleTraces.push(trace),
  });
  const registry = new ProviderRegistry({
    baseUrl: "http://registry.invalid/prefix",
    fetchImpl: spyFetch("registry", sent),
    onTrace: (trace) => registryTraces.push(trace),
  }).register(module);
  const client = registry.createClient("provider-sdk");
  assert.ok(client instanceof ProviderApiClient);
  await client.startRun({ input: "hi" });
  assert.equal(sent.length, 1);
  assert.equal(sent[0].via, "registry");
  assert.equal(sent[0].url, "http://registry.invalid/prefix/v1/messages");
  assert.equal(registryTraces.length, 1);
  assert.equal(moduleTraces.length, 0);
  // Everything else stays the module's: key, default model and token cap.
  assert.equal(sent[0].headers.get("x-api-key"), "module-key");
  assert.deepEqual(sent[0].body, {
    model: "model-of-module",
    max_tokens: 77,
    messages: [{ role: "user", content: "hi" }],
  });
});

Deno.test("a field the registry leaves undefined keeps the module's value", async () => {
  const sent: Sent[] = [];
  const moduleTraces: ProviderTrace[] = [];
  const module = createProviderModule({
    apiKey: "k",
    defaultModel: "m",
    defaultMaxTokens: 5,
    baseUrl: "http://module.invalid",
    fetchImpl: spyFetch("module", sent),
    onTrace: (trace) => moduleTraces.push(trace),
  });
  // Only fetchImpl is set; baseUrl is explicitly undefined.
  const registry = new ProviderRegistry({
    baseUrl: undefined,
    fetchImpl: spyFetch("registry", sent),
  }).register(module);
  await registry.createClient("provider-sdk").startRun({ input: "x" });
  assert.equal(sent[0].via, "registry");
  assert.equal(sent[0].url, "http://module.invalid/v1/messages");
  assert.equal(moduleTraces.length, 1, "the module's onTrace is kept");

  // A registry with nothing set builds the module's client unchanged.
  await new ProviderRegistry().register(module).createClient("provider-sdk").startRun({
    input: "y",
  });
  assert.equal(sent[1].via, "module");
  assert.equal(sent[1].url, "http://module.invalid/v1/messages");
});

Deno.test("a module captures a copy of its config", async () => {
  const sent: Sent[] = [];
  const config = {
    apiKey: "k",
    defaultModel: "before",
    defaultMaxTokens: 5,
    fetchImpl: spyFetch("module", sent),
  };
  const module = createProviderModule(config);
  config.defaultModel = "after";
  const client = new ProviderRegistry({ baseUrl: "http://r.invalid" }).register(module)
    .createClient("provider-sdk");
  await client.startRun({ input: "x" });
  assert.equal((sent[0].body as { model: string }).model, "before");
});

Deno.test("the managed-agents module builds its client with the registry's settings", async () => {
  const sent: Sent[] = [];
  const traces: ProviderTrace[] = [];
  const module = createProviderManagedAgentProviderModule({
    authToken: "token-1",
    agentId: "agent_1",
    environmentId: "env_1",
    baseUrl: "http://module.invalid",
  });
  const registry = new ProviderRegistry({
    baseUrl: "http://registry.invalid",
    fetchImpl: spyFetch("registry", sent),
    onTrace: (trace) => traces.push(trace),
  }).register(module);
  const client = registry.createClient("provider-managed-agents");
  assert.ok(client instanceof ProviderManagedAgentClient);
  const agent = await client.getAgent("agent_1");
  assert.equal(agent.id, "agent_1");
  assert.equal(sent[0].url, "http://registry.invalid/v1/agents/agent_1");
  assert.equal(sent[0].headers.get("authorization"), "Bearer token-1");
  assert.equal(sent[0].headers.get("provider-beta"), "managed-agents-2026-04-01");
  assert.equal(traces.length, 1);
});

Deno.test("PROVIDER_RUNTIME_SUPPORT is a frozen map of the eleven names", () => {
  assert.ok(Object.isFrozen(PROVIDER_RUNTIME_SUPPORT));
  assert.deepEqual(Object.keys(PROVIDER_RUNTIME_SUPPORT), [...RUNTIME_CAPABILITY_NAMES]);
  assert.equal(RUNTIME_CAPABILITY_NAMES.length, 11);
  const on = Object.entries(PROVIDER_RUNTIME_SUPPORT).filter(([, v]) => v).map(([k]) => k);
  assert.deepEqual(on, ["runs", "streaming", "batch"]);
  assert.throws(() => {
    (PROVIDER_RUNTIME_SUPPORT as Record<string, boolean>).teams = true;
  }, TypeError);
  assert.throws(() => {
    delete (PROVIDER_RUNTIME_SUPPORT as Partial<Record<string, boolean>>).runs;
  }, TypeError);
  assert.equal(PROVIDER_RUNTIME_SUPPORT.teams, false);
  // It is derived from the one declaration, like each module and client.
  assert.deepEqual(
    PROVIDER_RUNTIME_SUPPORT,
    declareCapabilities(PROVIDER_CAPABILITY_DECLARATION["provider-sdk"]),
  );
  assert.ok(Object.isFrozen(PROVIDER_CAPABILITY_DECLARATION));
  assert.ok(Object.isFrozen(PROVIDER_CAPABILITY_DECLARATION["provider-sdk"]));
});

Deno.test("declareCapabilities fills every name and rejects unknown ones", () => {
  const map = declareCapabilities(["teams"]);
  assert.equal(Object.keys(map).length, 11);
  assert.equal(map.teams, true);
  assert.equal(map.runs, false);
  assert.ok(Object.isFrozen(map));
  assert.throws(() => declareCapabilities(["runz" as "runs"]), /Unknown capability name: runz/);
  assert.throws(
    () => providerCapabilities("constructor" as "provider-managed-agents"),
    /Unknown provider module kind: constructor/,
  );
});

Deno.test("both modules' kinds and advertised capabilities", () => {
  const sdk = createProviderModule({ apiKey: "k" });
  assert.equal(sdk.kind, "provider-sdk");
  assert.equal(sdk.runtimeOnly, false);
  assert.equal(sdk.capabilities, PROVIDER_RUNTIME_SUPPORT);
  assert.ok(Object.isFrozen(sdk));

  const managed = createProviderManagedAgentProviderModule({ apiKey: "k" });
  assert.equal(managed.kind, "provider-managed-agents");
  assert.equal(managed.runtimeOnly, true);
  const on = Object.entries(managed.capabilities).filter(([, v]) => v).map(([k]) => k);
  assert.deepEqual(on, ["runs", "streaming"]);
  assert.equal(managed.capabilities, providerCapabilities("provider-managed-agents"));

  // What a module advertises is what its clients report.
  const registry = new ProviderRegistry({ baseUrl: "http://r.invalid" })
    .register(sdk)
    .register(managed);
  assert.deepEqual(
    registry.createClient("provider-sdk").getRuntimeCapabilities(),
    sdk.capabilities,
  );
  assert.deepEqual(
    registry.createClient("provider-managed-agents").getRuntimeCapabilities(),
    managed.capabilities,
  );
  assert.deepEqual(registry.list(), [
    { kind: "provider-sdk", runtimeOnly: false, capabilities: sdk.capabilities },
    { kind: "provider-managed-agents", runtimeOnly: true, capabilities: managed.capabilities },
  ]);
  assert.equal(registry.supports("provider-sdk", "batch"), true);
  assert.equal(registry.supports("provider-managed-agents", "batch"), false);
  assert.equal(registry.supports("provider-managed-agents", "streaming"), true);
  assert.equal(registry.supports("nothing", "runs"), false);
});

Deno.test("the registry refuses duplicates, impostors and unknown kinds", () => {
  const registry = new ProviderRegistry({ baseUrl: "http://r.invalid" })
    .register(createProviderModule({ apiKey: "k" }));
  assert.throws(
    () => registry.register(createProviderModule({ apiKey: "other" })),
    /already registered/,
  );
  const impostor: ProviderModule = {
    kind: "provider-managed-agents",
    runtimeOnly: true,
    capabilities: providerCapabilities("provider-managed-agents"),
    createClient: () => ({}) as RuntimeClient,
  };
  assert.throws(() => registry.register(impostor), /reserved/);
  assert.throws(() => registry.register({} as ProviderModule), /needs a kind/);
  assert.throws(() => registry.createClient("provider-managed-agents"), /No provider module/);
  assert.equal(registry.get("provider-managed-agents"), undefined);
  assert.equal(registry.has("provider-sdk"), true);

  // Another kind is welcome: its factory receives the registry's settings.
  let received: unknown;
  const custom: ProviderModule = {
    kind: "custom-runtime",
    runtimeOnly: true,
    capabilities: declareCapabilities(["runs"]),
    createClient(overrides) {
      received = overrides;
      return new ProviderApiClient({ apiKey: "k", ...overrides });
    },
  };
  registry.register(custom);
  registry.createClient("custom-runtime");
  assert.deepEqual(received, {
    baseUrl: "http://r.invalid",
    fetchImpl: undefined,
    onTrace: undefined,
  });
});

Deno.test("modules check credentials up front; baseUrl may come later", () => {
  assert.throws(() => createProviderModule({ apiKey: "" }), /apiKey is required/);
  assert.throws(() => createProviderManagedAgentProviderModule({}), /apiKey or authToken/);
  const module = createProviderModule({ apiKey: "k" });
  assert.throws(() => new ProviderRegistry().register(module).createClient("provider-sdk"), {
    name: "TypeError",
    message: /baseUrl is required/,
  });
});
