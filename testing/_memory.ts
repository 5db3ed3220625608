/**
 * Memory stores in the provider simulator: stores, memories with path conflicts and content
 * preconditions, and the version history of every change (with redaction).
 *
 * @module
 */
import { type Json, jsonResponse } from "./http.ts";
import type { MemoryStoreEntry } from "./managed_agents.ts";
import {
  bad,
  conflict,
  MEMORY_ROUTE,
  newId,
  notFound,
  now,
  obj,
  paginate,
  patchMetadata,
  requireString,
  type Section,
  visible,
} from "./_support.ts";
import type { SimulatorRouteContext } from "./simulator.ts";

/** The hex SHA-256 of a text (WebCrypto: the same in Deno, Node and browsers). */
async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Installs the memory store, memory and memory version routes. */
export function installMemoryRoutes({ state, route }: Section): void {
  const mem = MEMORY_ROUTE;
  function getStore(id: string): MemoryStoreEntry {
    const store = state.memoryStores.get(id);
    if (!store) throw notFound(`Memory store ${id}`);
    return store;
  }
  route("POST", "/v1/memory_stores", async (c) => {
    const body = await c.body();
    requireString(body, "name");
    const at = now();
    const record: Json = {
      id: newId("memstore"),
      type: "memory_store",
      name: body.name,
      description: body.description ?? "",
      metadata: patchMetadata({}, body.metadata),
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    state.memoryStores.set(record.id as string, { record, memories: new Map(), versions: [] });
    return jsonResponse(record);
  }, mem);
  route("GET", "/v1/memory_stores", (c) => {
    const records = [...state.memoryStores.values()].map((s) => s.record);
    return jsonResponse(paginate(visible(records, c.url), c.url));
  }, mem);
  route("GET", "/v1/memory_stores/:id", (c) => jsonResponse(getStore(c.params.id).record), mem);
  route("POST", "/v1/memory_stores/:id", async (c) => {
    const store = getStore(c.params.id);
    const body = await c.body();
    if (store.record.archived_at) throw bad("Archived memory stores are read-only");
    if (body.name !== undefined) store.record.name = requireString(body, "name");
    if (body.description !== undefined) store.record.description = body.description;
    if ("metadata" in body) {
      store.record.metadata = patchMetadata(store.record.metadata, body.metadata);
    }
    store.record.updated_at = now();
    return jsonResponse(store.record);
  }, mem);
  route("DELETE", "/v1/memory_stores/:id", (c) => {
    getStore(c.params.id);
    state.memoryStores.delete(c.params.id);
    return jsonResponse({ id: c.params.id, type: "memory_store_deleted" });
  }, mem);
  route("POST", "/v1/memory_stores/:id/archive", (c) => {
    const store = getStore(c.params.id);
    store.record.archived_at ??= now();
    return jsonResponse(store.record);
  }, mem);

  function memoryView(memory: Json, view: string | null, fallback: "basic" | "full"): Json {
    return (view ?? fallback) === "full" ? memory : { ...memory, content: null };
  }
  function writableStore(id: string): MemoryStoreEntry {
    const store = getStore(id);
    if (store.record.archived_at) throw bad("Archived memory stores are read-only");
    return store;
  }
  function addVersion(store: MemoryStoreEntry, memory: Json, operation: string): void {
    const version: Json = {
      id: newId("memver"),
      type: "memory_version",
      memory_id: memory.id,
      memory_store_id: memory.memory_store_id,
      operation,
      path: memory.path,
      content: operation === "deleted" ? null : memory.content,
      content_sha256: memory.content_sha256,
      content_size_bytes: memory.content_size_bytes,
      created_by: { type: "api_actor", api_key_id: "apikey_simulator" },
      redacted_at: null,
      redacted_by: null,
      created_at: now(),
    };
    store.versions.push(version);
    memory.memory_version_id = version.id;
  }
  function checkPath(path: unknown): string {
    if (typeof path !== "string" || !path.startsWith("/") || path.length > 1024) {
      throw bad("path must start with / and be at most 1024 bytes");
    }
    return path;
  }
  function pathTaken(store: MemoryStoreEntry, path: string, except?: string): void {
    for (const memory of store.memories.values()) {
      if (memory.path === path && memory.id !== except) {
        throw conflict("memory_path_conflict_error", `A memory already exists at ${path}`, {
          conflicting_memory_id: memory.id,
          conflicting_path: path,
        });
      }
    }
  }
  route("POST", "/v1/memory_stores/:id/memories", async (c) => {
    const store = writableStore(c.params.id);
    const body = await c.body();
    const path = checkPath(body.path);
    const content = typeof body.content === "string" ? body.content : "";
    pathTaken(store, path);
    const at = now();
    const memory: Json = {
      id: newId("mem"),
      type: "memory",
      memory_store_id: c.params.id,
      path,
      content,
      content_sha256: await sha256(content),
      content_size_bytes: new TextEncoder().encode(content).length,
      memory_version_id: null,
      created_at: at,
      updated_at: at,
    };
    store.memories.set(memory.id as string, memory);
    addVersion(store, memory, "created");
    return jsonResponse(memoryView(memory, c.url.searchParams.get("view"), "full"));
  }, mem);
  route("GET", "/v1/memory_stores/:id/memories", (c) => {
    const store = getStore(c.params.id);
    const prefix = c.url.searchParams.get("path_prefix") ?? "/";
    const depth = Number(c.url.searchParams.get("depth") ?? 0);
    const view = c.url.searchParams.get("view");
    const items: Json[] = [];
    const prefixes = new Set<string>();
    for (const memory of store.memories.values()) {
      const path = memory.path as string;
      if (!path.startsWith(prefix)) continue;
      const rest = path.slice(prefix.length).split("/").filter((s) => s !== "");
      if (depth > 0 && rest.length > depth) {
        const folder = prefix + rest.slice(0, depth).join("/") + "/";
        if (!prefixes.has(folder)) {
          prefixes.add(folder);
          items.push({ type: "memory_prefix", path: folder });
        }
        continue;
      }
      items.push(memoryView(memory, view, "basic"));
    }
    return jsonResponse(paginate(items, c.url));
  }, mem);
  function getMemory(c: SimulatorRouteContext): { store: MemoryStoreEntry; memory: Json } {
    const store = getStore(c.params.id);
    const memory = store.memories.get(c.params.mid);
    if (!memory) throw notFound(`Memory ${c.params.mid}`);
    return { store, memory };
  }
  route("GET", "/v1/memory_stores/:id/memories/:mid", (c) => {
    return jsonResponse(memoryView(getMemory(c).memory, c.url.searchParams.get("view"), "full"));
  }, mem);
  route("POST", "/v1/memory_stores/:id/memories/:mid", async (c) => {
    writableStore(c.params.id);
    const { store, memory } = getMemory(c);
    const body = await c.body();
    const precondition = obj(body.precondition);
    if (precondition && precondition.content_sha256 !== memory.content_sha256) {
      throw conflict("memory_precondition_failed_error", "The memory changed since it was read");
    }
    if (body.path !== undefined) {
      const path = checkPath(body.path);
      pathTaken(store, path, memory.id as string);
      memory.path = path;
    }
    if (typeof body.content === "string") {
      memory.content = body.content;
      memory.content_sha256 = await sha256(body.content);
      memory.content_size_bytes = new TextEncoder().encode(body.content).length;
    }
    memory.updated_at = now();
    addVersion(store, memory, "modified");
    return jsonResponse(memoryView(memory, c.url.searchParams.get("view"), "full"));
  }, mem);
  route("DELETE", "/v1/memory_stores/:id/memories/:mid", (c) => {
    writableStore(c.params.id);
    const { store, memory } = getMemory(c);
    const expected = c.url.searchParams.get("expected_content_sha256");
    if (expected !== null && expected !== memory.content_sha256) {
      throw conflict("memory_precondition_failed_error", "The memory changed since it was read");
    }
    addVersion(store, memory, "deleted");
    store.memories.delete(memory.id as string);
    return jsonResponse({ id: memory.id, type: "memory_deleted" });
  }, mem);

  route("GET", "/v1/memory_stores/:id/memory_versions", (c) => {
    let versions = [...getStore(c.params.id).versions].reverse();
    const memoryId = c.url.searchParams.get("memory_id");
    if (memoryId) versions = versions.filter((v) => v.memory_id === memoryId);
    return jsonResponse(paginate(versions, c.url));
  }, mem);
  function getVersion(c: SimulatorRouteContext): Json {
    const version = getStore(c.params.id).versions.find((v) => v.id === c.params.vid);
    if (!version) throw notFound(`Memory version ${c.params.vid}`);
    return version;
  }
  route(
    "GET",
    "/v1/memory_stores/:id/memory_versions/:vid",
    (c) => jsonResponse(getVersion(c)),
    mem,
  );
  route("POST", "/v1/memory_stores/:id/memory_versions/:vid/redact", (c) => {
    const version = getVersion(c);
    if (!version.redacted_at) {
      Object.assign(version, {
        path: null,
        content: null,
        content_sha256: null,
        content_size_bytes: null,
        redacted_at: now(),
        redacted_by: { type: "api_actor", api_key_id: "apikey_simulator" },
      });
    }
    return jsonResponse(version);
  }, mem);
}
