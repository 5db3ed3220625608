/**
 * Composition of request steps, in the manner of Hono's `compose`: each step receives the
 * context and a `next` that runs the rest of the chain, and returns the response.
 *
 * @module
 */

/** Runs the rest of the chain. */
export type Next = () => Promise<Response>;

/** One step of a chain: answer directly, throw, or call `next` and return (or adapt) its answer. */
export type Step<C> = (context: C, next: Next) => Response | Promise<Response>;

/** A composed chain. */
export type Chain<C> = (context: C) => Promise<Response>;

/**
 * Composes steps into one chain. The last step must answer without calling `next`; calling
 * `next` past the end, or twice in one step, rejects.
 *
 * @example
 * ```ts
 * import { compose } from "./chain.ts";
 * const chain = compose<{ seen: string[] }>(
 *   (context, next) => {
 *     context.seen.push("first");
 *     return next();
 *   },
 *   () => new Response("done"),
 * );
 * const response = await chain({ seen: [] });
 * console.log(await response.text()); // "done"
 * ```
 */
export function compose<C>(...steps: readonly Step<C>[]): Chain<C> {
  const count = steps.length;
  return function run(context: C): Promise<Response> {
    let called = -1;
    function dispatch(index: number): Promise<Response> {
      if (index <= called) return Promise.reject(new Error("next() was called twice in one step"));
      called = index;
      if (index >= count) return Promise.reject(new Error("The chain ended without a response"));
      try {
        const result = steps[index](context, () => dispatch(index + 1));
        return result instanceof Promise ? result : Promise.resolve(result);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return dispatch(0);
  };
}
