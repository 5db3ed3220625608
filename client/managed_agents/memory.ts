/**
 * Memory: memory stores, memories and memory versions. The memory wire conversion (with the
 * path-conflict error), the memory paths and the methods {@linkcode ProviderManagedAgentClient}
 * takes from here.
 *
 * @module
 */
import { collect, compact, pathSegment, range, wire } from "./_resource.ts";
import { PROVIDER_COLLECTION_PATHS } from "./paths.ts";
import type {
  CreateMemoryParams,
  CreateMemoryStoreParams,
  ListMemoriesParams,
  ListMemoryStoresParams,
  ManagedAgentListOptions,
  ManagedAgentMemory,
  ManagedAgentMemoryStore,
  ManagedAgentMemoryVersion,
  ManagedAgentRequestOptions,
  UpdateMemoryParams,
  UpdateMemoryStoreParams,
} from "./types.ts";
import { ProviderApiError } from "../errors.ts";
import { MemoryPathConflictError } from "./errors.ts";

/**
 * The path of a memory store.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerMemoryStorePath } from "@automation/runtime/client";
 * assert.deepEqual(providerMemoryStorePath("memstore_1"), "/v1/memory_stores/memstore_1");
 * ```
 */
export function providerMemoryStorePath(storeId: string): string {
  return `/v1/memory_stores/${pathSegment("storeId", storeId)}`;
}

/**
 * The path of a store's memories, or of one memory when `memoryId` is given. Updates are `POST`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerMemoryPath } from "@automation/runtime/client";
 * assert.equal(
 *   providerMemoryPath("memstore_1", "mem_1"),
 *   "/v1/memory_stores/memstore_1/memories/mem_1",
 * );
 * ```
 */
export function providerMemoryPath(storeId: string, memoryId?: string): string {
  const base = `${providerMemoryStorePath(storeId)}/memories`;
  return memoryId === undefined ? base : `${base}/${pathSegment("memoryId", memoryId)}`;
}

/**
 * The path of a store's memory versions, or of one version when `versionId` is given.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { providerMemoryVersionPath } from "@automation/runtime/client";
 * assert.equal(providerMemoryVersionPath("memstore_1"), "/v1/memory_stores/memstore_1/memory_versions");
 * ```
 */
export function providerMemoryVersionPath(storeId: string, versionId?: string): string {
  const base = `${providerMemoryStorePath(storeId)}/memory_versions`;
  return versionId === undefined ? base : `${base}/${pathSegment("versionId", versionId)}`;
}

/** Narrows a provider 409 on an occupied memory path to {@linkcode MemoryPathConflictError}. */
function memoryError(error: unknown): unknown {
  if (error instanceof ProviderApiError && error.type === "memory_path_conflict_error") {
    return new MemoryPathConflictError(error);
  }
  return error;
}

/**
 * The memory store, memory and memory-version operations of
 * {@linkcode ProviderManagedAgentClient}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryPathConflictError, ProviderManagedAgentClient } from "@automation/runtime/client";
 *
 * // A local stand-in for the provider whose path is already taken.
 * const client = new ProviderManagedAgentClient({
 *   baseUrl: "https://provider.example",
 *   apiKey: "<API_KEY>",
 *   fetchImpl: () =>
 *     Promise.resolve(Response.json({
 *       type: "error",
 *       error: {
 *         type: "memory_path_conflict_error",
 *         message: "A memory already exists at /notes.md",
 *         conflicting_memory_id: "mem_1",
 *       },
 *     }, { status: 409 })),
 * });
 * await assert.rejects(
 *   client.createMemory("memstore_1", { path: "/notes.md", content: "hello" }),
 *   (error) => error instanceof MemoryPathConflictError && error.conflictingMemoryId === "mem_1",
 * );
 * ```
 */
export interface ManagedAgentMemoryApi {
  /** Creates a memory store. */
  createMemoryStore(
    params: CreateMemoryStoreParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore>;

  /** Reads a memory store. */
  getMemoryStore(
    storeId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore>;

  /** Lists memory stores (every page). */
  listMemoryStores(params?: ListMemoryStoresParams): Promise<ManagedAgentMemoryStore[]>;

  /** Yields memory stores page by page. */
  iterateMemoryStores(
    params?: ListMemoryStoresParams,
  ): AsyncGenerator<ManagedAgentMemoryStore, void>;

  /** Updates a memory store's name, description or metadata. */
  updateMemoryStore(
    storeId: string,
    params: UpdateMemoryStoreParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore>;

  /** Deletes a memory store. */
  deleteMemoryStore(storeId: string, options?: ManagedAgentRequestOptions): Promise<void>;

  /** Archives a memory store (permanent, read-only; no unarchive). */
  archiveMemoryStore(
    storeId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore>;

  /**
   * Creates a memory. An occupied path rejects with {@linkcode MemoryPathConflictError}
   * (HTTP 409 `memory_path_conflict_error`).
   */
  createMemory(
    storeId: string,
    params: CreateMemoryParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemory>;

  /** Reads a memory (`view` `full` by default). */
  getMemory(
    storeId: string,
    memoryId: string,
    view?: "basic" | "full",
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemory>;

  /** Lists a store's memories (every page; `view` `basic` by default omits content). */
  listMemories(
    storeId: string,
    params?: ListMemoriesParams & ManagedAgentListOptions,
  ): Promise<ManagedAgentMemory[]>;

  /** Yields a store's memories page by page. */
  iterateMemories(
    storeId: string,
    params?: ListMemoriesParams & ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentMemory, void>;

  /**
   * Updates a memory with a `POST` (content, a rename, and an optional `content_sha256`
   * precondition). A rename onto an occupied path rejects with {@linkcode MemoryPathConflictError}.
   */
  updateMemory(
    storeId: string,
    memoryId: string,
    params: UpdateMemoryParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemory>;

  /** Deletes a memory. */
  deleteMemory(
    storeId: string,
    memoryId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<void>;

  /** Lists a store's memory versions, or one memory's (every page, newest first). */
  listMemoryVersions(
    storeId: string,
    memoryId?: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentMemoryVersion[]>;

  /** Yields memory versions page by page. */
  iterateMemoryVersions(
    storeId: string,
    memoryId?: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentMemoryVersion, void>;

  /** Reads a memory version. */
  getMemoryVersion(
    storeId: string,
    versionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryVersion>;

  /** Removes a version's content while keeping the audit trail. */
  redactMemoryVersion(
    storeId: string,
    versionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryVersion>;
}

/** The implementation of {@linkcode ManagedAgentMemoryApi}, installed on the client's prototype. */
export const memoryApi: ManagedAgentMemoryApi & ThisType<ManagedAgentMemoryApi> = {
  createMemoryStore(
    params: CreateMemoryStoreParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore> {
    return wire(this).post(
      PROVIDER_COLLECTION_PATHS.memoryStores,
      compact({
        name: params.name,
        description: params.description,
        metadata: params.metadata,
      }),
      options,
    );
  },

  getMemoryStore(
    storeId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore> {
    return wire(this).get(providerMemoryStorePath(storeId), undefined, options);
  },

  listMemoryStores(params?: ListMemoryStoresParams): Promise<ManagedAgentMemoryStore[]> {
    return collect(this.iterateMemoryStores(params));
  },

  iterateMemoryStores(
    params?: ListMemoryStoresParams,
  ): AsyncGenerator<ManagedAgentMemoryStore, void> {
    return wire(this).iterate(PROVIDER_COLLECTION_PATHS.memoryStores, {
      include_archived: params?.includeArchived,
      created_at: range(params?.createdAt),
    }, params);
  },

  updateMemoryStore(
    storeId: string,
    params: UpdateMemoryStoreParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore> {
    return wire(this).post(
      providerMemoryStorePath(storeId),
      compact({
        name: params.name,
        description: params.description,
        metadata: params.metadata,
      }),
      options,
    );
  },

  deleteMemoryStore(storeId: string, options?: ManagedAgentRequestOptions): Promise<void> {
    return wire(this).delete(providerMemoryStorePath(storeId), options);
  },

  archiveMemoryStore(
    storeId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryStore> {
    return wire(this).post(`${providerMemoryStorePath(storeId)}/archive`, undefined, options);
  },

  async createMemory(
    storeId: string,
    params: CreateMemoryParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemory> {
    try {
      return await wire(this).post<ManagedAgentMemory>(
        providerMemoryPath(storeId),
        { path: params.path, content: params.content },
        options,
      );
    } catch (error) {
      throw memoryError(error);
    }
  },

  getMemory(
    storeId: string,
    memoryId: string,
    view?: "basic" | "full",
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemory> {
    return wire(this).get(providerMemoryPath(storeId, memoryId), { view }, options);
  },

  listMemories(
    storeId: string,
    params?: ListMemoriesParams & ManagedAgentListOptions,
  ): Promise<ManagedAgentMemory[]> {
    return collect(this.iterateMemories(storeId, params));
  },

  iterateMemories(
    storeId: string,
    params?: ListMemoriesParams & ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentMemory, void> {
    return wire(this).iterate(providerMemoryPath(storeId), {
      path_prefix: params?.pathPrefix,
      depth: params?.depth,
      view: params?.view,
    }, params);
  },

  async updateMemory(
    storeId: string,
    memoryId: string,
    params: UpdateMemoryParams,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemory> {
    try {
      return await wire(this).post<ManagedAgentMemory>(
        providerMemoryPath(storeId, memoryId),
        compact({
          content: params.content,
          path: params.path,
          precondition: params.precondition,
        }),
        options,
      );
    } catch (error) {
      throw memoryError(error);
    }
  },

  deleteMemory(
    storeId: string,
    memoryId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<void> {
    return wire(this).delete(providerMemoryPath(storeId, memoryId), options);
  },

  listMemoryVersions(
    storeId: string,
    memoryId?: string,
    params?: ManagedAgentListOptions,
  ): Promise<ManagedAgentMemoryVersion[]> {
    return collect(this.iterateMemoryVersions(storeId, memoryId, params));
  },

  iterateMemoryVersions(
    storeId: string,
    memoryId?: string,
    params?: ManagedAgentListOptions,
  ): AsyncGenerator<ManagedAgentMemoryVersion, void> {
    return wire(this).iterate(providerMemoryVersionPath(storeId), { memory_id: memoryId }, params);
  },

  getMemoryVersion(
    storeId: string,
    versionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryVersion> {
    return wire(this).get(providerMemoryVersionPath(storeId, versionId), undefined, options);
  },

  redactMemoryVersion(
    storeId: string,
    versionId: string,
    options?: ManagedAgentRequestOptions,
  ): Promise<ManagedAgentMemoryVersion> {
    return wire(this).post(
      `${providerMemoryVersionPath(storeId, versionId)}/redact`,
      undefined,
      options,
    );
  },
};
