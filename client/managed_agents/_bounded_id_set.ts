/**
 * A set of ids that remembers only the most recently added ones, so a driver tailing a session
 * of any length keeps a fixed amount of dedupe state.
 *
 * @module
 */

/** A first-in-first-out set with a capacity: adding beyond it forgets the oldest id. */
export class BoundedIdSet {
  readonly #capacity: number;
  readonly #ids = new Set<string>();

  /** Creates a set remembering at most `capacity` ids. */
  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) {
      throw new RangeError("capacity must be a whole number of at least 1");
    }
    this.#capacity = capacity;
  }

  /** How many ids are remembered now. */
  get size(): number {
    return this.#ids.size;
  }

  /** Whether the id is remembered. */
  has(id: string): boolean {
    return this.#ids.has(id);
  }

  /** Remembers the id, forgetting the oldest one when full. */
  add(id: string): void {
    if (this.#ids.has(id)) return;
    this.#ids.add(id);
    if (this.#ids.size > this.#capacity) {
      // A Set iterates in insertion order, so the first value is the oldest.
      const oldest = this.#ids.values().next().value as string;
      this.#ids.delete(oldest);
    }
  }
}
