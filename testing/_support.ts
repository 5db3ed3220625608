/**
 * What the managed-agents sections of the provider simulator share: ids and times, the provider's
 * refusals, field checks, metadata patches, cursor pagination, and the context each section's
 * routes are installed with.
 *
 * @module
 */
import { type Json, SimulatorHttpError } from "./http.ts";
import type { ManagedAgentsState } from "./managed_agents.ts";
import type {
  ProviderSimulator,
  SimulatorRouteHandler,
  SimulatorRouteOptions,
} from "./simulator.ts";

/** The managed-agents beta value every managed-agents route requires. */
export const MANAGED_AGENTS_BETA = "managed-agents-2026-04-01";
/** The memory beta value the vendor's SDK sends (also accepted on memory routes). */
export const MEMORY_BETA = "agent-memory-2026-07-22";

/** The betas of the memory routes. */
export const MEMORY_ROUTE: SimulatorRouteOptions = Object.freeze({
  betas: Object.freeze([MANAGED_AGENTS_BETA, MEMORY_BETA]),
});

/** Adds a managed-agents route (the managed-agents beta is required unless `options` say else). */
export type AddRoute = (
  method: string,
  pattern: string,
  handler: SimulatorRouteHandler,
  options?: SimulatorRouteOptions,
) => void;

/** What a section's routes are installed with. */
export interface Section {
  /** The simulator serving them. */
  readonly simulator: ProviderSimulator;
  /** The managed-agents state. */
  readonly state: ManagedAgentsState;
  /** Adds a route. */
  readonly route: AddRoute;
}

let counter = 0;

/** A fresh provider-style id: the prefix, the time and a counter (`sesn_lq3…000042`). */
export function newId(prefix: string): string {
  counter += 1;
  return `${prefix}_${Date.now().toString(36)}${String(counter).padStart(6, "0")}`;
}

/** Now, as the provider writes times. */
export function now(): string {
  return new Date().toISOString();
}

/** The value when it is a string. */
export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The value when it is a JSON object. */
export function obj(value: unknown): Json | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Json
    : undefined;
}

/** A 400 `invalid_request_error`. */
export function bad(message: string): SimulatorHttpError {
  return new SimulatorHttpError(400, "invalid_request_error", message);
}

/** A 404 `not_found_error` for `what`. */
export function notFound(what: string): SimulatorHttpError {
  return new SimulatorHttpError(404, "not_found_error", `${what} not found`);
}

/** A 409 that must not be retried. */
export function conflict(type: string, message: string, extra?: Json): SimulatorHttpError {
  return new SimulatorHttpError(409, type, message, {
    headers: { "x-should-retry": "false" },
    extra,
  });
}

/** The non-empty string field `key` of `body`, else a 400. */
export function requireString(body: Json, key: string): string {
  const value = body[key];
  if (typeof value !== "string" || value === "") throw bad(`${key} is required`);
  return value;
}

/** `current` with `patch` applied: a key set to null is removed. */
export function patchMetadata(current: unknown, patch: unknown): Json {
  const out: Json = { ...(obj(current) ?? {}) };
  const changes = obj(patch);
  if (!changes) return out;
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete out[key];
    else out[key] = value;
  }
  return out;
}

/** Cursor pagination over a list: `limit` (default 20, max 1000) and `page` (an offset token). */
export function paginate(items: Json[], url: URL, options: { prev?: boolean } = {}): Json {
  const limit = Math.min(Math.max(Number(url.searchParams.get("limit") ?? 20) || 20, 1), 1000);
  const page = url.searchParams.get("page");
  let start = 0;
  if (page !== null) {
    const match = /^p(\d+)$/.exec(page);
    if (!match) throw bad("page is not a valid cursor");
    start = Number(match[1]);
  }
  const data = items.slice(start, start + limit);
  const next = start + limit < items.length ? `p${start + limit}` : null;
  const out: Json = { data, next_page: next };
  if (options.prev) out.prev_page = start > 0 ? `p${Math.max(0, start - limit)}` : null;
  return out;
}

/** The records a list shows: archived ones only with `include_archived=true`. */
export function visible(records: Json[], url: URL): Json[] {
  return url.searchParams.get("include_archived") === "true"
    ? records
    : records.filter((r) => r.archived_at == null);
}

/** The text of a message's content blocks. */
export function textOf(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content.map((b) => obj(b)?.type === "text" ? String(obj(b)?.text ?? "") : "").join("");
}
