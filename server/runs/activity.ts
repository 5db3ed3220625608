/**
 * Run activity within one replica: a run was started, messaged, cancelled, a tool request of it
 * answered, or a provider webhook told of it. The run's tail subscribes to learn that it should
 * wake now instead of at its next poll; the run gateway, the tool answers and the webhook intake
 * notify. Across replicas the store carries the truth (the event log and the run records); this
 * is only the prompt to look at it.
 *
 * @module
 */

/** Told the id of a run with news. */
export type RunActivityListener = (runId: string) => void;

/**
 * Listeners of run activity in this process.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RunActivity } from "./activity.ts";
 * const activity = new RunActivity();
 * const seen: string[] = [];
 * const stop = activity.subscribe((runId) => seen.push(runId));
 * activity.notify("sesn_1");
 * stop();
 * activity.notify("sesn_2");
 * assert.deepEqual(seen, ["sesn_1"]);
 * ```
 */
export class RunActivity {
  readonly #listeners = new Set<RunActivityListener>();

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: RunActivityListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Tells every listener that `runId` has news. A listener that throws does not stop the rest. */
  notify(runId: string): void {
    for (const listener of this.#listeners) {
      try {
        listener(runId);
      } catch {
        // A listener's failure is its own; the others still hear of the run.
      }
    }
  }
}
