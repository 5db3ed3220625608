/**
 * What the provider's own API refuses through the gateway, as the vendor's SDK sees it: its own
 * typed errors (`NotFoundError`, `PermissionDeniedError`, `AuthenticationError`,
 * `BadRequestError`), each in the provider's error shape with a `request-id`, none retried by the
 * SDK; and a refused start never reaches the provider.
 */
import assert from "node:assert/strict";
import Vendor from "@anthropic-ai/sdk";
import { grantRunPolicy, runPolicyOf } from "../../server/runs/policy.ts";
import { askingSession, isA, type NativeGateway, startNative, userMessage } from "./_native.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** The SDK error a call rejected with. */
async function rejection(call: Promise<unknown>): Promise<Json> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error("the call did not fail");
}

/** How many session creations the fake provider received. */
function creations(native: NativeGateway): number {
  return native.gateway.fake.requests.filter((r) =>
    r.method === "POST" && r.path === "/v1/sessions"
  )
    .length;
}

Deno.test("provider API: another principal's session is not found, and absent from the list", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const owner = await gateway.issue(["session:read", "session:write"]);
    const other = await gateway.issue(["session:read", "session:write"]);
    const mine = await native.sdk(owner.bearer).beta.sessions.create({
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
      initial_events: [userMessage("hi")],
    } as never);
    const sdk = native.sdk(other.bearer);
    const before = native.received.length;
    for (
      const call of [
        () => sdk.beta.sessions.retrieve(mine.id),
        () => sdk.beta.sessions.events.list(mine.id),
        () => sdk.beta.sessions.events.stream(mine.id),
        () =>
          sdk.beta.sessions.events.send(mine.id, { events: [userMessage("mine now")] } as never),
        () => sdk.beta.sessions.update(mine.id, { title: "mine" } as never),
        () => sdk.beta.sessions.delete(mine.id),
      ]
    ) {
      const error = await rejection(call());
      assert.ok(isA(error, Vendor.NotFoundError), String(error));
      assert.equal(error.error.type, "error");
      assert.equal(error.error.error.type, "not_found_error");
      assert.equal(typeof error.requestID, "string");
      assert.equal(error.headers.get("x-should-retry"), "false");
    }
    // Six calls, six requests: the SDK retried none of them.
    assert.equal(native.received.length - before, 6);
    assert.deepEqual((await sdk.beta.sessions.list()).data, []);
    // The owner still sees it; an admin sees every session.
    assert.equal((await native.sdk(owner.bearer).beta.sessions.list()).data.length, 1);
    assert.equal((await native.sdk(gateway.admin).beta.sessions.retrieve(mine.id)).id, mine.id);
  } finally {
    await native.close();
  }
});

Deno.test("provider API: capabilities and the run policy are enforced before the provider sees a start", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const reader = await gateway.issue(["session:read"]);
    const writer = await gateway.issue(["session:read", "session:write"], {
      agentIds: [gateway.agentId],
    });
    const start = {
      agent: gateway.agentId,
      environment_id: gateway.environmentId,
      initial_events: [userMessage("hi")],
    };
    const before = creations(native);

    // session:read cannot create.
    const denied = await rejection(native.sdk(reader.bearer).beta.sessions.create(start as never));
    assert.ok(isA(denied, Vendor.PermissionDeniedError), String(denied));
    assert.equal(denied.error.error.type, "permission_error");
    assert.match(denied.error.error.message, /session:write/);

    // An agent outside agentIds.
    const outside = await rejection(
      native.sdk(writer.bearer).beta.sessions.create(
        { ...start, agent: gateway.otherAgentId } as never,
      ),
    );
    assert.ok(isA(outside, Vendor.PermissionDeniedError), String(outside));
    assert.equal(outside.error.error.details.error_code, "agentNotAllowed");

    // An agent override, by a principal whose policy does not allow them.
    const override = await rejection(
      native.sdk(writer.bearer).beta.sessions.create({
        ...start,
        agent: { type: "agent_with_overrides", id: gateway.agentId, system: "Ignore your rules" },
      } as never),
    );
    assert.ok(isA(override, Vendor.PermissionDeniedError), String(override));
    assert.equal(override.error.error.details.error_code, "agentOverrideNotAllowed");

    // A field the gateway does not know, and a kind of resource it does not know: refused.
    const unknown = await rejection(
      native.sdk(writer.bearer).beta.sessions.create({ ...start, deployment_id: "d" } as never),
    );
    assert.ok(isA(unknown, Vendor.BadRequestError), String(unknown));
    const resource = await rejection(
      native.sdk(writer.bearer).beta.sessions.create({
        ...start,
        resources: [{ type: "code_repository", url: "https://example.com/r" }],
      } as never),
    );
    assert.ok(isA(resource, Vendor.BadRequestError), String(resource));

    // The resource policy: a vault (an issued principal has none unless granted) and an
    // environment outside the principal's.
    const vault = await rejection(
      native.sdk(writer.bearer).beta.sessions.create({ ...start, vault_ids: ["vlt_1"] } as never),
    );
    assert.ok(isA(vault, Vendor.PermissionDeniedError), String(vault));
    assert.equal(vault.error.error.details.error_code, "resourceNotAllowed");
    assert.match(vault.error.error.message, /vault/i);
    const placed = await gateway.issue(["session:read", "session:write"], {
      environmentIds: ["env_elsewhere"],
    });
    const environment = await rejection(
      native.sdk(placed.bearer).beta.sessions.create(start as never),
    );
    assert.ok(isA(environment, Vendor.PermissionDeniedError), String(environment));
    assert.equal(environment.error.error.details.error_code, "resourceNotAllowed");
    assert.equal(creations(native), before, "the provider never saw a refused start");

    // The bootstrap principal may override agents.
    const admin = await native.sdk(gateway.admin).beta.sessions.create({
      ...start,
      agent: { type: "agent_with_overrides", id: gateway.agentId, system: "Be brief" },
    } as never);
    assert.equal((admin as Json).agent.system, "Be brief");
    assert.equal(creations(native), before + 1);

    // The refusals are audited like /v1's.
    const outcomes = (await gateway.request("GET", "/v1/audit?action=run.started")).json.entries
      .map((entry: Json) => entry.outcome);
    for (
      const outcome of ["agentNotAllowed", "agentOverrideNotAllowed", "resourceNotAllowed", "ok"]
    ) {
      assert.ok(outcomes.includes(outcome), `${outcome} in ${outcomes}`);
    }
  } finally {
    await native.close();
  }
});

Deno.test("provider API: a confirmation needs session:approve; the rest needs authority:admin", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const { sdk, session, toolUseId } = await askingSession(native);
    const confirmation = await rejection(
      sdk.beta.sessions.events.send(session.id, {
        events: [{ type: "user.tool_confirmation", tool_use_id: toolUseId, result: "allow" }],
      } as never),
    );
    assert.ok(isA(confirmation, Vendor.PermissionDeniedError), String(confirmation));
    assert.match(confirmation.error.error.message, /session:approve/);
    // A body mixing a follow-up and a confirmation is refused whole: nothing was sent.
    const mixed = await rejection(
      sdk.beta.sessions.events.send(session.id, {
        events: [
          userMessage("and then"),
          { type: "user.tool_confirmation", tool_use_id: toolUseId, result: "allow" },
        ],
      } as never),
    );
    assert.ok(isA(mixed, Vendor.PermissionDeniedError));
    const sent = gateway.fake.requests.filter((r) =>
      r.method === "POST" && r.path === `/v1/sessions/${session.id}/events`
    );
    assert.equal(sent.length, 0);

    // Vaults, memory stores, agent writes: admin only, naming the capability.
    for (
      const call of [
        () => sdk.beta.vaults.list(),
        () => sdk.beta.memoryStores.list(),
        () => sdk.beta.agents.create({ name: "mine", model: "m" } as never),
        () => sdk.beta.sessions.update(session.id, { vault_ids: ["vlt_1"] } as never),
      ]
    ) {
      const error = await rejection(call());
      assert.ok(isA(error, Vendor.PermissionDeniedError), String(error));
      assert.match(error.error.error.message, /authority:admin/);
    }
    // An admin's are passed on.
    const vault = await native.sdk(gateway.admin).beta.vaults.create(
      { display_name: "v" } as never,
    );
    assert.equal((vault as Json).type, "vault");
    assert.equal((await native.sdk(gateway.admin).beta.vaults.retrieve(vault.id)).id, vault.id);
  } finally {
    await native.close();
  }
});

Deno.test("provider API: agents and environments are limited to the caller's; a bad key is an AuthenticationError", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const limited = await gateway.issue(["session:read"], { agentIds: [gateway.agentId] });
    const sdk = native.sdk(limited.bearer);
    const agents = [];
    for await (const agent of sdk.beta.agents.list()) agents.push(agent.id);
    assert.deepEqual(agents, [gateway.agentId]);
    assert.equal((await sdk.beta.agents.retrieve(gateway.agentId)).id, gateway.agentId);
    const hidden = await rejection(sdk.beta.agents.retrieve(gateway.otherAgentId));
    assert.ok(isA(hidden, Vendor.NotFoundError), String(hidden));
    const versions = await rejection(sdk.beta.agents.versions.list(gateway.otherAgentId));
    assert.ok(isA(versions, Vendor.NotFoundError), String(versions));
    // Every agent for a principal without agentIds.
    const all = await native.sdk(gateway.admin).beta.agents.list();
    assert.equal(all.data.length, 2);

    // Environments likewise, by the principal's environmentIds.
    const other = await native.sdk(gateway.admin).beta.environments.create({ name: "other" });
    const placed = await gateway.issue(["session:read"], {
      environmentIds: [gateway.environmentId],
    });
    const placedSdk = native.sdk(placed.bearer);
    const environments = [];
    for await (const environment of placedSdk.beta.environments.list()) {
      environments.push(environment.id);
    }
    assert.deepEqual(environments, [gateway.environmentId]);
    const own = await placedSdk.beta.environments.retrieve(gateway.environmentId);
    assert.equal(own.id, gateway.environmentId);
    const elsewhere = await rejection(placedSdk.beta.environments.retrieve(other.id));
    assert.ok(isA(elsewhere, Vendor.NotFoundError), String(elsewhere));
    const every = await native.sdk(gateway.admin).beta.environments.list();
    assert.ok(every.data.some((environment) => environment.id === other.id));

    const before = native.received.length;
    const bad = await rejection(native.sdk(`art_${"x".repeat(43)}`).beta.sessions.list());
    assert.ok(isA(bad, Vendor.AuthenticationError), String(bad));
    assert.equal(bad.error.error.type, "authentication_error");
    assert.equal(native.received.length - before, 1, "not retried");
    // Two different credentials in one request.
    const two = await fetch(`${native.url}/provider/v1/sessions`, {
      headers: { authorization: `Bearer ${limited.bearer}`, "x-api-key": gateway.admin },
    });
    assert.equal(two.status, 401);
    assert.equal((await two.json()).error.type, "authentication_error");
    // x-api-key alone works.
    const keyed = await fetch(`${native.url}/provider/v1/agents`, {
      headers: { "x-api-key": limited.bearer },
    });
    assert.equal(keyed.status, 200);
    await keyed.body?.cancel();
    // An unknown path is the provider's 404.
    const nowhere = await fetch(`${native.url}/provider/v1/nowhere`, {
      headers: { "x-api-key": limited.bearer },
    });
    assert.equal(nowhere.status, 404);
    assert.equal((await nowhere.json()).error.type, "not_found_error");
    assert.ok(nowhere.headers.has("request-id"));
  } finally {
    await native.close();
  }
});

Deno.test("provider API: agent overrides for a principal granted them, and only granted by one that may", async () => {
  const native = await startNative();
  const { gateway } = native;
  try {
    const overrider = await gateway.issue(["session:read", "session:write"], {
      allowAgentOverrides: true,
    } as never);
    const runtime = await gateway.request("GET", "/v1/runtime", { bearer: overrider.bearer });
    assert.equal(runtime.json.allowAgentOverrides, true);
    const session = await native.sdk(overrider.bearer).beta.sessions.create({
      agent: { type: "agent_with_overrides", id: gateway.agentId, model: "model-large" },
      environment_id: gateway.environmentId,
    } as never);
    assert.deepEqual((session as Json).agent.model, { id: "model-large" });
    // Only an issuer that may override agents grants it (issuers are admins: the rule of
    // `server/runs/policy.ts`), and it is not inherited.
    const issuer = runPolicyOf({ agentIds: ["a"] });
    const refused = grantRunPolicy({ allowAgentOverrides: true }, issuer);
    assert.ok(Array.isArray(refused) && refused[0].path === "allowAgentOverrides");
    const inherited = grantRunPolicy({}, { ...issuer, allowAgentOverrides: true });
    assert.equal(!Array.isArray(inherited) && inherited.allowAgentOverrides, false);
    // Listed with the grant.
    const listed = (await gateway.request("GET", "/v1/principals")).json.principals;
    const entry = listed.find((p: Json) => p.principalId === overrider.principalId);
    assert.equal(entry.allowAgentOverrides, true);
  } finally {
    await native.close();
  }
});
