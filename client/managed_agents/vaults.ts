/**
 * Vaults and credentials: the vault and credential wire conversion, their paths and the methods
 * {@linkcode ProviderManagedAgentClient} takes from here. Credential secrets are write-only.
 *
 * @module
 */
import { collect, compact, pathSegment, wire } from "./_resource.ts";
import { PROVIDER_COLLECTION_PATHS } from "./paths.ts";
import type {
  CreateCredentialParams,
  CreateVaultParams,
  ManagedAgentCredential,
  ManagedAgentCredentialValidation,
  ManagedAgentListOptions,
  ManagedAgentRequestOptions,
  ManagedAgentVault,
  UpdateCredentialParams,
  UpdateVaultParams,
} from "./types.ts";

/**
 * The path of a vault.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerVaultPath } from "@automation/runtime/client";
 * assert.deepEqual(providerVaultPath("vlt_1"), "/v1/vaults/vlt_1");
 * ```
 */
export function providerVaultPath(vaultId: string): string {
  return `/v1/vaults/${pathSegment("vaultId", vaultId)}`;
}

/**
 * The path of a vault's credentials, or of one credential when `credentialId` is given.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerCredentialPath } from "@automation/runtime/client";
 * assert.deepEqual(providerCredentialPath("vlt_1", "vcrd_1"), "/v1/vaults/vlt_1/credentials/vcrd_1");
 * ```
 */
export function providerCredentialPath(vaultId: string, credentialId?: string): string {
  const base = `${providerVaultPath(vaultId)}/credentials`;
  return credentialId === undefined ? base : `${base}/${pathSegment("credentialId", credentialId)}`;
}

/**
 * The vault and credential operations of {@linkcode ProviderManagedAgentClient}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ProviderManagedAgentClient } from "@automation/runtime/client";
 *
 * // A local stand-in for the provider that answers in two pages.
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: "https://provider.example",
 *   apiKey: "<API_KEY>",
 *   fetchImpl: (input) => {
 *     const second = new URL(String(input)).searchParams.get("page") === "p2";
 *     return Promise.resolve(Response.json(
 *       second
 *         ? { data: [{ id: "vlt_2" }], next_page: null }
 *         : { data: [{ id: "vlt_1" }], next_page: "p2" },
 *     ));
 *   },
 * });
 * // A list walks every page.
 * const vaults = await client.listVaults();
 * assert.deepEqual(vaults.map((vault) => vault.id), ["vlt_1", "vlt_2"]);
 * ```
 */
export interface ManagedAgentVaultsApi {
  /** Creates a vault. */
  createVault(
    params: CreateVaultParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentVault>;

  /** Reads a vault. */
  getVault(vaultId: string, options?: ManagedAgentRequestOptions): Promise<ManagedAgentVault>;

  /** Lists vaults (every page), archived ones too when `includeArchived`. */
  listVaults(
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentVault[]>;

  /** Yields vaults page by page. */
  iterateVaults(
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentVault, void>;

  /** Updates a vault and returns it. */
  updateVault(
    vaultId: string,
    params: UpdateVaultParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentVault>;

  /** Deletes a vault. */
  deleteVault(vaultId: string, options?: ManagedAgentRequestOptions): Promise<void>;

  /** Archives a vault; cascades to its credentials (secrets purged, records kept). */
  archiveVault(vaultId: string, options?: ManagedAgentRequestOptions): Promise<ManagedAgentVault>;

  /** Creates a credential (one active credential per `mcp_server_url`); secrets are write-only. */
  createCredential(
    vaultId: string,
    params: CreateCredentialParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential>;

  /** Reads a credential (never its secrets). */
  getCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential>;

  /** Lists a vault's credentials (every page), archived ones too when `includeArchived`. */
  listCredentials(
    vaultId: string,
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentCredential[]>;

  /** Yields a vault's credentials page by page. */
  iterateCredentials(
    vaultId: string,
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentCredential, void>;

  /** Updates a credential (`mcp_server_url`, `token_endpoint` and `client_id` are locked). */
  updateCredential(
    vaultId: string,
    credentialId: string,
    params: UpdateCredentialParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential>;

  /** Deletes a credential. */
  deleteCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<void>;

  /** Archives a credential: its secret is purged and its `mcp_server_url` freed. */
  archiveCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential>;

  /** Probes an `mcp_oauth` credential; the answer carries a `status`. */
  validateMcpOauthCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredentialValidation>;
}

/** The implementation of {@linkcode ManagedAgentVaultsApi}, installed on the client's prototype. */
export const vaultsApi: ManagedAgentVaultsApi & ThisType<ManagedAgentVaultsApi> = {
  createVault(
    params: CreateVaultParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentVault> {
    return wire(this).post(
      PROVIDER_COLLECTION_PATHS.vaults,
      compact({
        display_name: params.displayName,
        metadata: params.metadata,
      }),
      options,
    );
  },

  getVault(vaultId: string, options?: ManagedAgentRequestOptions): Promise<ManagedAgentVault> {
    return wire(this).get(providerVaultPath(vaultId), undefined, options);
  },

  listVaults(
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentVault[]> {
    return collect(this.iterateVaults(includeArchived, params));
  },

  iterateVaults(
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentVault, void> {
    return wire(this).iterate(PROVIDER_COLLECTION_PATHS.vaults, {
      include_archived: includeArchived,
    }, params);
  },

  updateVault(
    vaultId: string,
    params: UpdateVaultParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentVault> {
    return wire(this).post(
      providerVaultPath(vaultId),
      compact({
        display_name: params.displayName,
        metadata: params.metadata,
      }),
      options,
    );
  },

  deleteVault(vaultId: string, options?: ManagedAgentRequestOptions): Promise<void> {
    return wire(this).delete(providerVaultPath(vaultId), options);
  },

  archiveVault(vaultId: string, options?: ManagedAgentRequestOptions): Promise<ManagedAgentVault> {
    return wire(this).post(`${providerVaultPath(vaultId)}/archive`, undefined, options);
  },

  createCredential(
    vaultId: string,
    params: CreateCredentialParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential> {
    return wire(this).post(
      providerCredentialPath(vaultId),
      compact({
        display_name: params.displayName,
        auth: params.auth,
      }),
      options,
    );
  },

  getCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential> {
    return wire(this).get(providerCredentialPath(vaultId, credentialId), undefined, options);
  },

  listCredentials(
    vaultId: string,
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentCredential[]> {
    return collect(this.iterateCredentials(vaultId, includeArchived, params));
  },

  iterateCredentials(
    vaultId: string,
    includeArchived?: boolean,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentCredential, void> {
    return wire(this).iterate(providerCredentialPath(vaultId), {
      include_archived: includeArchived,
    }, params);
  },

  updateCredential(
    vaultId: string,
    credentialId: string,
    params: UpdateCredentialParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential> {
    return wire(this).post(
      providerCredentialPath(vaultId, credentialId),
      compact({
        display_name: params.displayName,
        auth: params.auth,
      }),
      options,
    );
  },

  deleteCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<void> {
    return wire(this).delete(providerCredentialPath(vaultId, credentialId), options);
  },

  archiveCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredential> {
    return wire(this).post(
      `${providerCredentialPath(vaultId, credentialId)}/archive`,
      undefined,
      options,
    );
  },

  validateMcpOauthCredential(
    vaultId: string,
    credentialId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentCredentialValidation> {
    return wire(this).post(
      `${providerCredentialPath(vaultId, credentialId)}/mcp_oauth_validate`,
      undefined,
      options,
    );
  },
};
