/**
 * A set of ids that remembers only the most recently added ones, so a driver tailing a session
 * of any length keeps a fixed amount of dedupe state.
 *
 * @module
 */

/** A first-in-first-out set with a capacity: adding beyond it forgets the oldest id. */
export class BoundedIdSet {
  readonly #ids = new Set<string>();
  // Insertion order as a ring, so evicting the oldest id is O(1) (iterating a Set from its start
  // after many deletes walks over the deleted slots).
  readonly #ring: (string | undefined)[];
  #next = 0;

  /** Creates a set remembering at most `capacity` ids. */
  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) {
      throw new RangeError("capacity must be a whole number of at least 1");
    }
    this.#ring = new Array(capacity);
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
    const oldest = this.#ring[this.#next];
    if (oldest !== undefined) this.#ids.delete(oldest);
    this.#ring[this.#next] = id;
    this.#next = (this.#next + 1) % this.#ring.length;
    this.#ids.add(id);
  }
}
