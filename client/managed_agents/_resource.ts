/**
 * What every resource group of the managed-agents client shares: the request helpers bound to one
 * client ({@linkcode ResourceWire}), body compaction, page and range queries, path segments, and
 * the installer that puts each group's methods on the client's prototype. Internal.
 *
 * The groups live one per file (`agents.ts`, `environments.ts`, `sessions.ts`,
 * `session_events.ts`, `memory.ts`, `vaults.ts`, `deployments.ts`); each exports an interface
 * of its methods, which `ProviderManagedAgentClient` merges, and an object implementing it, which
 * {@linkcode installMethods} copies onto the class. Adding a resource group is one new file, then
 * its interface in the class's `extends` list and its object in the `installMethods` call of
 * `client.ts`, and its exports in `mod.ts`.
 *
 * @module
 */
import { callFields, type HttpRequest, type HttpTransport, type QueryValue } from "../http.ts";
import { ProviderConnectionError } from "../errors.ts";
import type {
  JsonObject,
  ManagedAgentCreatedAtRange,
  ManagedAgentListOptions,
  ManagedAgentRequestOptions,
} from "./types.ts";

interface Page<T> {
  data?: T[];
  next_page?: string | null;
}

/** The request helpers of one client: every call carries the caller's per-call options. */
export class ResourceWire {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** `GET` returning the parsed JSON answer. */
  get<T>(
    path: string,
    query?: Record<string, QueryValue>,
    options?: ManagedAgentRequestOptions,
  ): Promise<T> {
    return this.#http.json<T>({ method: "GET", path, query, ...callFields(options) });
  }

  /** `POST` with a JSON body (none when `body` is undefined). */
  post<T>(
    path: string,
    body: unknown,
    options?: ManagedAgentRequestOptions,
    query?: Record<string, QueryValue>,
  ): Promise<T> {
    return this.#http.json<T>({ method: "POST", path, body, query, ...callFields(options) });
  }

  /** `DELETE`; resolves to nothing. */
  async delete(
    path: string,
    options?: ManagedAgentRequestOptions,
    query?: Record<string, QueryValue>,
  ): Promise<void> {
    await this.#http.json<unknown>({ method: "DELETE", path, query, ...callFields(options) });
  }

  /** Walks a list page by page from `options.page`, stopping on a repeated cursor. */
  async *iterate<T>(
    path: string,
    query: Record<string, QueryValue>,
    options: ManagedAgentListOptions | undefined,
  ): AsyncGenerator<T, void, undefined> {
    let page = options?.page;
    const seen = new Set<string>();
    while (true) {
      const answer = await this.get<Page<T>>(
        path,
        { ...query, limit: options?.limit, page },
        options,
      );
      for (const item of answer?.data ?? []) yield item;
      const next = answer?.next_page;
      if (typeof next !== "string" || next === "" || seen.has(next)) return;
      seen.add(next);
      page = next;
    }
  }

  /**
   * Sends a request as it is given and returns the response once its headers arrived, body
   * unread (an error status has been turned into `ProviderApiError` by then).
   */
  send(request: HttpRequest): Promise<Response> {
    return this.#http.send(request);
  }

  /** Opens an SSE stream and returns its body once the response headers arrived. */
  async stream(
    path: string,
    options?: ManagedAgentRequestOptions,
    query?: Record<string, QueryValue>,
  ): Promise<ReadableStream<Uint8Array>> {
    const response = await this.#http.send({
      method: "GET",
      path,
      query,
      accept: "text/event-stream",
      stream: true,
      ...callFields(options),
    });
    if (!response.body) throw new ProviderConnectionError("The event stream has no body");
    return response.body;
  }
}

// A WeakMap, not a field: the installed methods reach the wire without a public property.
const wires = new WeakMap<object, ResourceWire>();

/** Binds a client to its wire; called once by the client's constructor. */
export function bindWire(client: object, resourceWire: ResourceWire): void {
  wires.set(client, resourceWire);
}

/** The wire of a client; a method called on anything else is a `TypeError`. */
export function wire(client: unknown): ResourceWire {
  const found = typeof client === "object" && client !== null ? wires.get(client) : undefined;
  if (found === undefined) {
    throw new TypeError("a ProviderManagedAgentClient method was called on another object");
  }
  return found;
}

/**
 * Copies each group's methods onto a prototype as class methods are defined (not enumerable),
 * refusing a name defined twice so two groups can never shadow each other.
 */
export function installMethods(prototype: object, ...groups: object[]): void {
  for (const group of groups) {
    for (const name of Object.keys(group)) {
      if (Object.hasOwn(prototype, name)) throw new Error(`method ${name} is defined twice`);
      Object.defineProperty(prototype, name, {
        value: (group as Record<string, unknown>)[name],
        writable: true,
        configurable: true,
        enumerable: false,
      });
    }
  }
}

/** Collects an async iterable into an array. */
export async function collect<T>(iterator: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterator) out.push(item);
  return out;
}

/** Copies the entries whose value is not undefined (null is kept: it clears on updates). */
export function compact(entries: Record<string, unknown>): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(entries)) {
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** A `created_at` range as a query value (`created_at[gte]=…`). */
export function range(value: ManagedAgentCreatedAtRange | undefined): QueryValue {
  return value as Record<string, string | undefined> | undefined;
}

/**
 * Encodes one id as a path segment the way the provider's SDK does (RFC 3986 `pchar` kept, the
 * rest percent-encoded). Empty ids, `.`, `..` and ids starting with `;` are refused.
 */
export function pathSegment(name: string, id: string): string {
  if (typeof id !== "string" || id === "") {
    throw new TypeError(`${name} must be a non-empty string`);
  }
  const encoded = id.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@]+/g, encodeURIComponent);
  if (/^(?:\.|%2e){1,2}$/i.test(encoded) || encoded.startsWith(";")) {
    throw new TypeError(`${name} cannot be used as a path segment`);
  }
  return encoded;
}
