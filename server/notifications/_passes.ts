/**
 * The background loop the dispatcher and the sender share: a pass that runs when woken and at
 * least every `pollMs`, one at a time (a wake during a pass runs one more after it), its failures
 * logged, the timer never keeping the process alive.
 *
 * @module
 */
import type { RuntimeLogger } from "../log.ts";

/** Runs `pass` when woken and periodically (see the module doc). */
export class Passes {
  readonly #pass: () => Promise<void>;
  readonly #pollMs: number;
  readonly #logger: RuntimeLogger;
  readonly #failure: string;
  #timer: ReturnType<typeof setInterval> | undefined;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = false;

  /**
   * A loop of `pass`, every `pollMs` at least; a failing pass is logged as `failure`.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Passes } from "./_passes.ts";
   * let runs = 0;
   * const logger = { request() {}, info() {}, error() {}, flush() {} };
   * const passes = new Passes(async () => void runs++, { pollMs: 1_000, logger, failure: "x" });
   * passes.wake();
   * passes.wake(); // during the first pass: one more after it
   * await new Promise((resolve) => setTimeout(resolve, 10));
   * await passes.stop();
   * assert.equal(runs, 2);
   * ```
   */
  constructor(
    pass: () => Promise<void>,
    options: { pollMs: number; logger: RuntimeLogger; failure: string },
  ) {
    this.#pass = pass;
    this.#pollMs = options.pollMs;
    this.#logger = options.logger;
    this.#failure = options.failure;
  }

  /** Whether {@linkcode Passes.stop} was called. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /**
   * Starts the periodic passes, the first after `pollMs` (a wake runs one sooner): an idle
   * server makes no store call before then.
   */
  start(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    this.#timer = setInterval(() => this.wake(), this.#pollMs);
    Deno.unrefTimer(this.#timer as unknown as number);
  }

  /** Runs a pass soon. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running !== null) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          await this.#pass();
        } catch (error) {
          this.#logger.error(this.#failure, {
            errorName: error instanceof Error ? error.name : typeof error,
          });
        }
      } while (this.#again && !this.#stopped);
      this.#running = null;
    })();
  }

  /** Stops the passes; resolves once a pass under way finished. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#running;
  }
}
