/**
 * The MCP session registry: session id → session, each bound to the principal that created it.
 * It enforces the session quotas, closes sessions that stay idle past the timeout (a session
 * with a request running or an SSE stream open is not idle), closes sessions whose principal
 * expired or (checked on each sweep) was revoked, and closes everything on shutdown. Its sweep
 * timer runs only while sessions exist and never keeps the process alive.
 *
 * @module
 */

/** Default idle timeout of a session: 15 minutes. */
export const DEFAULT_IDLE_TIMEOUT_MS = 900_000;

/** Default most sessions held at once. */
export const DEFAULT_MAX_SESSIONS = 1024;

/** Default most sessions one principal may hold. */
export const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL = 32;

/** What the registry needs of a session. */
export interface McpSessionHandle {
  /** The session id (sent as `Mcp-Session-Id`). */
  readonly id: string;
  /** The principal that created the session. */
  readonly principalId: string;
  /** When that principal's credential expires, ms since the epoch. */
  readonly expiresAtMs: number;
  /** Closes the session's transport and protocol server. */
  close(): Promise<void>;
}

/** Options of {@linkcode McpSessionRegistry}. */
export interface McpSessionRegistryOptions {
  /** Idle time after which a session is closed, in ms (default 15 min). */
  idleTimeoutMs?: number;
  /** Most sessions at once (default 1024). */
  maxSessions?: number;
  /** Most sessions per principal (default 32). */
  maxSessionsPerPrincipal?: number;
  /** How often sessions are swept, in ms (default: a quarter of the idle timeout, at most 30 s). */
  sweepIntervalMs?: number;
  /** Clock, ms since the epoch (default `Date.now`). */
  now?: () => number;
  /**
   * Whether a principal may still use its sessions (not revoked, not expired), asked on each
   * sweep for every principal holding a session; false closes its sessions. A rejection keeps
   * them (the next request authenticates anyway).
   */
  isPrincipalValid?: (principalId: string) => Promise<boolean>;
}

interface Entry<S> {
  readonly session: S;
  lastSeen: number;
  active: number;
}

/** Why {@linkcode McpSessionRegistry.reserve} refused. */
export type ReserveRefusal = "closed" | "serverFull" | "principalFull";

/**
 * Holds the live sessions of one MCP endpoint.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { McpSessionRegistry } from "./sessions.ts";
 * const registry = new McpSessionRegistry({ idleTimeoutMs: 60_000 });
 * const reservation = registry.reserve("principal-a");
 * if (typeof reservation !== "string") {
 *   reservation.commit({
 *     id: "s1",
 *     principalId: "principal-a",
 *     expiresAtMs: Date.now() + 3_600_000,
 *     close: () => Promise.resolve(),
 *   });
 * }
 * assert.equal(registry.lookup("s1", "principal-b"), undefined);
 * await registry.close();
 * ```
 */
export class McpSessionRegistry<S extends McpSessionHandle> {
  /** Idle timeout in ms. */
  readonly idleTimeoutMs: number;
  /** Most sessions at once. */
  readonly maxSessions: number;
  /** Most sessions per principal. */
  readonly maxSessionsPerPrincipal: number;
  #sweepIntervalMs: number;
  #now: () => number;
  #isPrincipalValid: ((principalId: string) => Promise<boolean>) | undefined;
  #entries = new Map<string, Entry<S>>();
  #perPrincipal = new Map<string, number>();
  #pending = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #sweeping: Promise<void> | null = null;
  #closed = false;

  /**
   * Creates an empty registry.
   */
  constructor(options: McpSessionRegistryOptions = {}) {
    this.idleTimeoutMs = positive(
      options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
      "idleTimeoutMs",
    );
    this.maxSessions = positive(options.maxSessions ?? DEFAULT_MAX_SESSIONS, "maxSessions");
    this.maxSessionsPerPrincipal = positive(
      options.maxSessionsPerPrincipal ?? DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
      "maxSessionsPerPrincipal",
    );
    this.#sweepIntervalMs = positive(
      options.sweepIntervalMs ?? Math.min(Math.ceil(this.idleTimeoutMs / 4), 30_000),
      "sweepIntervalMs",
    );
    this.#now = options.now ?? Date.now;
    this.#isPrincipalValid = options.isPrincipalValid;
  }

  /** Number of live sessions. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Claims room for a new session of `principalId`. Returns a reservation to `commit` once the
   * session exists or `cancel` when it never will, or why there is no room.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { McpSessionRegistry } from "./sessions.ts";
   * const registry = new McpSessionRegistry({ maxSessionsPerPrincipal: 1 });
   * const first = registry.reserve("p");
   * assert.equal(registry.reserve("p"), "principalFull");
   * if (typeof first !== "string") first.cancel();
   * ```
   */
  reserve(principalId: string): ReserveRefusal | McpSessionReservation<S> {
    if (this.#closed) return "closed";
    if (this.#entries.size + this.#pending >= this.maxSessions) return "serverFull";
    const held = this.#perPrincipal.get(principalId) ?? 0;
    if (held >= this.maxSessionsPerPrincipal) return "principalFull";
    this.#pending++;
    this.#perPrincipal.set(principalId, held + 1);
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      this.#pending--;
      return true;
    };
    return {
      commit: (session: S): void => {
        if (!settle()) return;
        if (session.principalId !== principalId) {
          this.#release(principalId);
          throw new Error("A session must belong to the principal that reserved it");
        }
        if (this.#closed) {
          // Shut down while the session was being created: end it rather than keep it.
          this.#release(principalId);
          session.close().catch(() => {});
          return;
        }
        this.#entries.set(session.id, { session, lastSeen: this.#now(), active: 0 });
        this.#arm();
      },
      cancel: (): void => {
        if (settle()) this.#release(principalId);
      },
    };
  }

  /**
   * The session with this id when it belongs to `principalId`, else undefined: another
   * principal's session is indistinguishable from an unknown one.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { McpSessionRegistry } from "./sessions.ts";
   * assert.equal(new McpSessionRegistry().lookup("nope", "p"), undefined);
   * ```
   */
  lookup(id: string, principalId: string): S | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined || entry.session.principalId !== principalId) return undefined;
    return entry.session;
  }

  /**
   * Marks a session busy (a request running or a stream open) until the returned function is
   * called; both ends count as activity for the idle timeout.
   */
  hold(id: string): () => void {
    const entry = this.#entries.get(id);
    if (entry === undefined) return () => {};
    entry.active++;
    entry.lastSeen = this.#now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.active--;
      entry.lastSeen = this.#now();
    };
  }

  /**
   * Forgets a session (its transport closed); returns whether it was held.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { McpSessionRegistry } from "./sessions.ts";
   * assert.equal(new McpSessionRegistry().delete("nope"), false);
   * ```
   */
  delete(id: string): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined) return false;
    this.#entries.delete(id);
    this.#release(entry.session.principalId);
    if (this.#entries.size === 0) this.#disarm();
    return true;
  }

  /**
   * Closes every session of a principal (after its revocation); returns how many closed.
   */
  async closePrincipal(principalId: string): Promise<number> {
    const doomed = [...this.#entries.values()]
      .filter((entry) => entry.session.principalId === principalId);
    await Promise.all(doomed.map((entry) => this.#closeEntry(entry)));
    return doomed.length;
  }

  /**
   * Closes idle sessions and those whose principal expired or is no longer valid.
   */
  sweep(): Promise<void> {
    this.#sweeping ??= this.#sweep().finally(() => this.#sweeping = null);
    return this.#sweeping;
  }

  /**
   * Closes every session and stops the sweep timer; later reservations are refused.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#disarm();
    if (this.#sweeping !== null) await this.#sweeping;
    await Promise.all([...this.#entries.values()].map((entry) => this.#closeEntry(entry)));
  }

  async #sweep(): Promise<void> {
    const now = this.#now();
    const doomed = new Set<Entry<S>>();
    const principals = new Set<string>();
    for (const entry of this.#entries.values()) {
      const idle = entry.active === 0 && now - entry.lastSeen >= this.idleTimeoutMs;
      if (idle || !(now < entry.session.expiresAtMs)) doomed.add(entry);
      else principals.add(entry.session.principalId);
    }
    if (this.#isPrincipalValid !== undefined) {
      const check = this.#isPrincipalValid;
      const invalid = new Set<string>();
      await Promise.all([...principals].map(async (principalId) => {
        try {
          if (!(await check(principalId))) invalid.add(principalId);
        } catch {
          // Unknown state: keep the sessions; every request authenticates on its own anyway.
        }
      }));
      for (const entry of this.#entries.values()) {
        if (invalid.has(entry.session.principalId)) doomed.add(entry);
      }
    }
    await Promise.all([...doomed].map((entry) => this.#closeEntry(entry)));
  }

  async #closeEntry(entry: Entry<S>): Promise<void> {
    const id = entry.session.id;
    if (this.#entries.get(id) !== entry) return;
    this.delete(id);
    try {
      await entry.session.close();
    } catch {
      // A session that fails to close is already forgotten; nothing else holds it.
    }
  }

  #release(principalId: string): void {
    const held = this.#perPrincipal.get(principalId) ?? 0;
    if (held <= 1) this.#perPrincipal.delete(principalId);
    else this.#perPrincipal.set(principalId, held - 1);
  }

  #arm(): void {
    if (this.#timer !== undefined || this.#closed) return;
    const timer = setInterval(() => {
      this.sweep();
    }, this.#sweepIntervalMs);
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  #disarm(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/** Room for one session, claimed by {@linkcode McpSessionRegistry.reserve}. */
export interface McpSessionReservation<S> {
  /** Registers the created session (once). */
  commit(session: S): void;
  /** Gives the room back when no session was created. */
  cancel(): void;
}

function positive(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive number`);
  }
  return value;
}
