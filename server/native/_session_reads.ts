/**
 * Reads of sessions from the provider (retrieve, and each session of a list), budgeted per
 * session on this replica: one read in flight per session and caller's API version (callers
 * arriving meanwhile share it), and its answer kept for a second (for at most
 * {@linkcode MAX_KEPT_SESSIONS} sessions), so a client reading in a loop costs the provider, on
 * the service's one key, at most about one read a second per session and replica. A change made
 * through the interface (update, archive, delete) forgets the kept answers at once. A failed
 * read is not kept: the next caller reads again.
 *
 * Unlike the budget of `/v1`'s run reads (`runs/_provider_reads.ts`), this one is not shared
 * across replicas: that one claims each read with a store write, and a session list reads up to
 * a hundred sessions, each of which would cost a write. With N replicas a session is read at
 * most about N times a second.
 *
 * @module
 */

/** How long a session read is kept, in ms. */
export const SESSION_READ_MS = 1_000;
/** Most sessions whose last reads are kept. */
export const MAX_KEPT_SESSIONS = 1_024;

interface Kept {
  at: number;
  text: string;
}

/**
 * Budgeted session reads of one replica (see the module doc).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SessionReads } from "./_session_reads.ts";
 * let now = 0;
 * let reads = 0;
 * const sessions = new SessionReads(() => now);
 * const read = () => Promise.resolve(`{"n":${++reads}}`);
 * assert.deepEqual(
 *   await Promise.all([sessions.read("s", "v", read), sessions.read("s", "v", read)]),
 *   ['{"n":1}', '{"n":1}'],
 * );
 * now = 999;
 * assert.equal(await sessions.read("s", "v", read), '{"n":1}');
 * now = 1_000;
 * assert.equal(await sessions.read("s", "v", read), '{"n":2}');
 * sessions.forget("s");
 * assert.equal(await sessions.read("s", "v", read), '{"n":3}');
 * ```
 */
export class SessionReads {
  readonly #now: () => number;
  readonly #inFlight = new Map<string, Promise<string>>();
  /** By session id, then by variant (the caller's API version and betas). */
  readonly #kept = new Map<string, Map<string, Kept>>();

  /** Reads on the server's clock, in ms. */
  constructor(now: () => number) {
    this.#now = now;
  }

  /**
   * The session `id` as `read` answers it for callers of `variant`, within the budget: the kept
   * answer while it is younger than {@linkcode SESSION_READ_MS}, else the read in flight, else a
   * new read.
   */
  read(id: string, variant: string, read: () => Promise<string>): Promise<string> {
    const kept = this.#kept.get(id)?.get(variant);
    if (kept !== undefined && this.#now() - kept.at < SESSION_READ_MS) {
      return Promise.resolve(kept.text);
    }
    const flight = `${id}\n${variant}`;
    let reading = this.#inFlight.get(flight);
    if (reading === undefined) {
      const current: Promise<string> = read().then((text) => {
        // A read `forget` let go of (begun before a change) is answered, not kept.
        if (this.#inFlight.get(flight) === current) this.#keep(id, variant, text);
        return text;
      }).finally(() => {
        if (this.#inFlight.get(flight) === current) this.#inFlight.delete(flight);
      });
      this.#inFlight.set(flight, current);
      reading = current;
    }
    return reading;
  }

  /** Forgets what is kept of session `id` and lets go of its reads in flight (it changed). */
  forget(id: string): void {
    this.#kept.delete(id);
    for (const flight of this.#inFlight.keys()) {
      if (flight.startsWith(`${id}\n`)) this.#inFlight.delete(flight);
    }
  }

  #keep(id: string, variant: string, text: string): void {
    let variants = this.#kept.get(id);
    if (variants === undefined) {
      if (this.#kept.size >= MAX_KEPT_SESSIONS) this.#evictOld();
      variants = new Map();
      this.#kept.set(id, variants);
    }
    variants.set(variant, { at: this.#now(), text });
  }

  /** Drops every kept answer past its second; all of them when none is. */
  #evictOld(): void {
    const now = this.#now();
    for (const [id, variants] of this.#kept) {
      for (const [variant, kept] of variants) {
        if (now - kept.at >= SESSION_READ_MS) variants.delete(variant);
      }
      if (variants.size === 0) this.#kept.delete(id);
    }
    if (this.#kept.size >= MAX_KEPT_SESSIONS) this.#kept.clear();
  }
}

/**
 * Provider reads of one principal's sessions, at most `limit` at a time on this replica (first
 * come, first served): a session list reads up to a hundred sessions, and a principal sending many
 * lists at once would otherwise have hundreds of reads in flight on the service's one key, whose
 * rate every principal shares. The reads waiting are bounded by the principal's requests in
 * flight (the in-flight quota) times a page. A principal with nothing in flight is forgotten.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PrincipalReads } from "./_session_reads.ts";
 * const reads = new PrincipalReads(2);
 * let running = 0;
 * let most = 0;
 * const read = async () => {
 *   most = Math.max(most, ++running);
 *   await new Promise((resolve) => setTimeout(resolve, 5));
 *   running--;
 * };
 * await Promise.all(Array.from({ length: 6 }, () => reads.run("p", read)));
 * assert.equal(most, 2);
 * assert.equal(reads.principals, 0);
 * ```
 */
export class PrincipalReads {
  readonly #limit: number;
  readonly #slots = new Map<string, { active: number; waiting: (() => void)[] }>();

  /** At most `limit` reads of one principal at a time. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Principals with reads in flight or waiting. */
  get principals(): number {
    return this.#slots.size;
  }

  /** Runs `read` for `principalId` once one of its slots is free. */
  async run<T>(principalId: string, read: () => Promise<T>): Promise<T> {
    let slot = this.#slots.get(principalId);
    if (slot === undefined) {
      slot = { active: 0, waiting: [] };
      this.#slots.set(principalId, slot);
    }
    if (slot.active < this.#limit) slot.active++;
    else await new Promise<void>((resolve) => slot.waiting.push(resolve));
    try {
      return await read();
    } finally {
      // The slot goes to the next read waiting, or is given back.
      const next = slot.waiting.shift();
      if (next !== undefined) next();
      else if (--slot.active === 0) this.#slots.delete(principalId);
    }
  }
}
