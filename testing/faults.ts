/**
 * The fault switches of the provider simulator: error answers, slow answers, slow and dropped
 * event streams. Each switch applies to the next matching request(s), then clears itself, so a
 * test arms exactly the failure it is about. `ProviderSimulator` exposes them as `failNext`,
 * `delayNext`, `delayNextStream` and `dropNextStream`; {@linkcode FaultSwitches} holds them.
 *
 * @module
 */

/** Which requests a switch applies to: none given, every request. */
export interface RequestMatch {
  /** Only requests with this method (any case). */
  method?: string;
  /** Only requests whose path equals this string or matches this pattern. */
  path?: string | RegExp;
}

/** An error answer of `ProviderSimulator.failNext`. */
export interface SimulatorFault extends RequestMatch {
  /** HTTP status to answer (such as 500, 503, 529 or 429). */
  status: number;
  /** Provider error type (default: the status's, such as `overloaded_error` for 529). */
  type?: string;
  /** Error message (default `Injected <status>`). */
  message?: string;
  /** Extra response headers (`retry-after`, `retry-after-ms`, `x-should-retry`). */
  headers?: Record<string, string>;
  /** How many matching requests fail in a row (default 1). */
  times?: number;
}

/** A slow answer of `ProviderSimulator.delayNext`. */
export interface SimulatorDelay extends RequestMatch {
  /** How long the answer is held, in ms. */
  ms: number;
  /** How many matching requests are held (default 1). */
  times?: number;
}

/**
 * How `ProviderSimulator.dropNextStream` cuts the next event stream: after `afterBytes` bytes of
 * frames (mid-frame when it falls there), or after `afterFrames` whole frames plus half of the
 * next one.
 */
export type StreamDrop = { afterBytes: number } | { afterFrames: number };

/** A slow event stream of `ProviderSimulator.delayNextStream`. */
export interface StreamDelay {
  /** How long the stream's answer (its headers, so its first byte) is held, in ms. */
  ms: number;
  /** How many streams are held (default 1). */
  times?: number;
}

function matches(match: RequestMatch, method: string, path: string): boolean {
  return (match.method === undefined || match.method.toUpperCase() === method) &&
    (match.path === undefined ||
      (typeof match.path === "string" ? match.path === path : match.path.test(path)));
}

/**
 * The armed switches. Each `take…` method returns the switch that applies to a request (or
 * stream) and counts it down, so it fires the number of times it was armed for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FaultSwitches } from "./faults.ts";
 * const faults = new FaultSwitches();
 * faults.failNext({ method: "POST", path: "/v1/sessions", status: 503, times: 2 });
 * assert.equal(faults.takeFault("GET", "/v1/sessions"), undefined);
 * assert.equal(faults.takeFault("POST", "/v1/sessions")?.status, 503);
 * assert.equal(faults.takeFault("POST", "/v1/sessions")?.status, 503);
 * assert.equal(faults.takeFault("POST", "/v1/sessions"), undefined);
 * ```
 */
export class FaultSwitches {
  readonly #faults: (SimulatorFault & { times: number })[] = [];
  readonly #delays: (SimulatorDelay & { times: number })[] = [];
  #drop: StreamDrop | undefined;
  #streamDelay: { ms: number; times: number } | undefined;

  /** Arms an error answer. */
  failNext(fault: SimulatorFault): void {
    this.#faults.push({ ...fault, times: fault.times ?? 1 });
  }

  /** Arms a slow answer. */
  delayNext(delay: SimulatorDelay): void {
    this.#delays.push({ ...delay, times: delay.times ?? 1 });
  }

  /** Arms a dropped stream (replacing one armed before). */
  dropNextStream(drop: StreamDrop): void {
    this.#drop = { ...drop };
  }

  /** Arms slow streams (replacing those armed before). */
  delayNextStream(delay: StreamDelay): void {
    this.#streamDelay = { ms: delay.ms, times: delay.times ?? 1 };
  }

  /** The error answer for this request, if one is armed for it. */
  takeFault(method: string, path: string): SimulatorFault | undefined {
    return take(this.#faults, method, path);
  }

  /** The delay of this request, in ms, if one is armed for it. */
  takeDelay(method: string, path: string): number | undefined {
    return take(this.#delays, method, path)?.ms;
  }

  /** The drop of the next stream, if one is armed. */
  takeStreamDrop(): StreamDrop | undefined {
    const drop = this.#drop;
    this.#drop = undefined;
    return drop;
  }

  /** The delay of the next stream, in ms, if one is armed. */
  takeStreamDelay(): number | undefined {
    const delay = this.#streamDelay;
    if (delay === undefined) return undefined;
    if (--delay.times <= 0) this.#streamDelay = undefined;
    return delay.ms;
  }
}

function take<T extends RequestMatch & { times: number }>(
  armed: T[],
  method: string,
  path: string,
): T | undefined {
  const index = armed.findIndex((entry) => matches(entry, method, path));
  if (index === -1) return undefined;
  const entry = armed[index];
  if (--entry.times <= 0) armed.splice(index, 1);
  return entry;
}
