/**
 * Vaults and their credentials in the provider simulator. A credential's secrets (tokens, secret
 * values) are kept apart and never appear in an answer; archiving forgets them.
 *
 * @module
 */
import { type Json, jsonResponse } from "./http.ts";
import type { SimulatedCredential, VaultEntry } from "./managed_agents.ts";
import {
  bad,
  conflict,
  newId,
  notFound,
  now,
  obj,
  paginate,
  patchMetadata,
  requireString,
  type Section,
  str,
  visible,
} from "./_support.ts";
import type { SimulatorRouteContext } from "./simulator.ts";

const SECRET_KEYS = ["access_token", "token", "secret_value", "refresh_token", "client_secret"];

function stripSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripSecrets);
  const o = obj(value);
  if (!o) return value;
  const out: Json = {};
  for (const [key, inner] of Object.entries(o)) {
    if (!SECRET_KEYS.includes(key)) out[key] = stripSecrets(inner);
  }
  return out;
}

/** Installs the vault and credential routes. */
export function installVaultRoutes({ state, route }: Section): void {
  function getVault(id: string): VaultEntry {
    const vault = state.vaults.get(id);
    if (!vault) throw notFound(`Vault ${id}`);
    return vault;
  }
  route("POST", "/v1/vaults", async (c) => {
    const body = await c.body();
    requireString(body, "display_name");
    const at = now();
    const record: Json = {
      id: newId("vlt"),
      type: "vault",
      display_name: body.display_name,
      metadata: patchMetadata({}, body.metadata),
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    state.vaults.set(record.id as string, { record, credentials: new Map() });
    return jsonResponse(record);
  });
  route("GET", "/v1/vaults", (c) => {
    const records = [...state.vaults.values()].map((v) => v.record);
    return jsonResponse(paginate(visible(records, c.url), c.url));
  });
  route("GET", "/v1/vaults/:id", (c) => jsonResponse(getVault(c.params.id).record));
  route("POST", "/v1/vaults/:id", async (c) => {
    const vault = getVault(c.params.id);
    const body = await c.body();
    if (vault.record.archived_at) throw bad("Archived vaults are read-only");
    if (body.display_name !== undefined) {
      vault.record.display_name = requireString(body, "display_name");
    }
    if ("metadata" in body) {
      vault.record.metadata = patchMetadata(vault.record.metadata, body.metadata);
    }
    vault.record.updated_at = now();
    return jsonResponse(vault.record);
  });
  route("DELETE", "/v1/vaults/:id", (c) => {
    getVault(c.params.id);
    state.vaults.delete(c.params.id);
    return jsonResponse({ id: c.params.id, type: "vault_deleted" });
  });
  route("POST", "/v1/vaults/:id/archive", (c) => {
    const vault = getVault(c.params.id);
    const at = now();
    vault.record.archived_at ??= at;
    for (const credential of vault.credentials.values()) {
      credential.record.archived_at ??= at;
      credential.secret = null;
    }
    return jsonResponse(vault.record);
  });
  function getCredential(c: SimulatorRouteContext): SimulatedCredential {
    const credential = getVault(c.params.id).credentials.get(c.params.cid);
    if (!credential) throw notFound(`Credential ${c.params.cid}`);
    return credential;
  }
  route("POST", "/v1/vaults/:id/credentials", async (c) => {
    const vault = getVault(c.params.id);
    if (vault.record.archived_at) throw bad("Archived vaults are read-only");
    const body = await c.body();
    const auth = obj(body.auth);
    const type = auth?.type;
    if (
      !auth || (type !== "mcp_oauth" && type !== "static_bearer" && type !== "environment_variable")
    ) {
      throw bad("auth.type must be mcp_oauth, static_bearer or environment_variable");
    }
    const url = str(auth.mcp_server_url);
    if (type !== "environment_variable") {
      if (!url) throw bad("auth.mcp_server_url is required");
      for (const other of vault.credentials.values()) {
        if (!other.record.archived_at && obj(other.record.auth)?.mcp_server_url === url) {
          throw conflict("conflict_error", `An active credential already serves ${url}`);
        }
      }
    }
    const at = now();
    const record: Json = {
      id: newId("vcrd"),
      type: "vault_credential",
      vault_id: c.params.id,
      display_name: body.display_name ?? null,
      metadata: patchMetadata({}, body.metadata),
      auth: stripSecrets(auth),
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    vault.credentials.set(record.id as string, { record, secret: auth });
    return jsonResponse(record);
  });
  route("GET", "/v1/vaults/:id/credentials", (c) => {
    const records = [...getVault(c.params.id).credentials.values()].map((x) => x.record);
    return jsonResponse(paginate(visible(records, c.url), c.url));
  });
  route("GET", "/v1/vaults/:id/credentials/:cid", (c) => jsonResponse(getCredential(c).record));
  route("POST", "/v1/vaults/:id/credentials/:cid", async (c) => {
    const credential = getCredential(c);
    const body = await c.body();
    if (credential.record.archived_at) throw bad("Archived credentials are read-only");
    const auth = obj(body.auth);
    if (auth) {
      const current = obj(credential.record.auth) ?? {};
      const refresh = obj(auth.refresh);
      const currentRefresh = obj(current.refresh);
      if (
        (auth.mcp_server_url !== undefined && auth.mcp_server_url !== current.mcp_server_url) ||
        (refresh?.token_endpoint !== undefined &&
          refresh.token_endpoint !== currentRefresh?.token_endpoint) ||
        (refresh?.client_id !== undefined && refresh.client_id !== currentRefresh?.client_id) ||
        (auth.type !== undefined && auth.type !== current.type)
      ) {
        throw bad("mcp_server_url, token_endpoint, client_id and type are locked");
      }
      credential.secret = { ...credential.secret, ...auth };
      credential.record.auth = stripSecrets({
        ...current,
        ...auth,
        refresh: refresh ? { ...currentRefresh, ...refresh } : current.refresh,
      });
    }
    if ("display_name" in body) credential.record.display_name = body.display_name ?? null;
    if ("metadata" in body) {
      credential.record.metadata = patchMetadata(credential.record.metadata, body.metadata);
    }
    credential.record.updated_at = now();
    return jsonResponse(credential.record);
  });
  route("DELETE", "/v1/vaults/:id/credentials/:cid", (c) => {
    getCredential(c);
    getVault(c.params.id).credentials.delete(c.params.cid);
    return jsonResponse({ id: c.params.cid, type: "vault_credential_deleted" });
  });
  route("POST", "/v1/vaults/:id/credentials/:cid/archive", (c) => {
    const credential = getCredential(c);
    credential.record.archived_at ??= now();
    credential.secret = null;
    return jsonResponse(credential.record);
  });
  route("POST", "/v1/vaults/:id/credentials/:cid/mcp_oauth_validate", (c) => {
    const credential = getCredential(c);
    if (obj(credential.record.auth)?.type !== "mcp_oauth") {
      throw bad("Only mcp_oauth credentials can be validated");
    }
    const secret = credential.secret;
    return jsonResponse({
      type: "vault_credential_validation",
      credential_id: c.params.cid,
      vault_id: c.params.id,
      status: secret && typeof secret.access_token === "string" ? "valid" : "invalid",
      has_refresh_token: typeof obj(secret?.refresh)?.refresh_token === "string",
      validated_at: now(),
      mcp_probe: null,
      refresh: null,
    });
  });
}
