/**
 * Composition of request steps, in the manner of Hono's `compose`: each step receives the
 * context and a `next` that runs the rest of the chain, and returns the response.
 *
 * Steps may answer synchronously. {@linkcode composeEager} keeps a chain synchronous for as long
 * as its steps are, so a request that needs no I/O allocates no promise on the way;
 * {@linkcode compose} always answers with a promise.
 *
 * @module
 */

/** Runs the rest of the chain. */
export type Next = () => Promise<Response>;

/** One step of a chain: answer directly, throw, or call `next` and return (or adapt) its answer. */
export type Step<C> = (context: C, next: Next) => Response | Promise<Response>;

/** A composed chain. */
export type Chain<C> = (context: C) => Promise<Response>;

/** Runs the rest of an eager chain: synchronously when every later step answers synchronously. */
export type EagerNext = () => Response | Promise<Response>;

/**
 * A step of an eager chain. Its `next` may answer without a promise, so the step must not call
 * `.then` on it (`await next()` and `return next()` are fine). Every eager step is also a
 * {@linkcode Step}.
 */
export type EagerStep<C> = (context: C, next: EagerNext) => Response | Promise<Response>;

/** A chain composed by {@linkcode composeEager}: a promise only when some step awaited. */
export type EagerChain<C> = (context: C) => Response | Promise<Response>;

/**
 * A check of the context: it throws to refuse the request, returns to let it continue (it may
 * record what it established on the context), or returns a promise when it must wait first.
 */
export type Guard<C> = (context: C) => void | Promise<void>;

/**
 * A step made of a {@linkcode Guard}: usable wherever a step is, and run by
 * {@linkcode composeEager} without a `next` function of its own.
 */
export interface GuardStep<C> extends EagerStep<C> {
  /** The check this step runs before the rest of the chain. */
  readonly guard: Guard<C>;
}

/**
 * Makes a step of a guard: it runs the check, then the rest of the chain.
 *
 * @example
 * ```ts
 * import { composeEager, guardStep } from "./chain.ts";
 * const requireName = guardStep<{ name?: string }>((context) => {
 *   if (context.name === undefined) throw new Error("A name is required");
 * });
 * const chain = composeEager(requireName, () => new Response("hello"));
 * console.log((chain({ name: "x" }) as Response).status); // 200
 * ```
 */
export function guardStep<C>(guard: Guard<C>): GuardStep<C> {
  const step = (context: C, next: EagerNext): Response | Promise<Response> => {
    const pending = guard(context);
    return pending instanceof Promise ? pending.then(next) : next();
  };
  return Object.assign(step, { guard });
}

function calledTwice(): Error {
  return new Error("next() was called twice in one step");
}

function endedWithoutResponse(): Error {
  return new Error("The chain ended without a response");
}

/**
 * Composes steps into a chain that stays synchronous while its steps do: a step that answers,
 * or throws, without awaiting anything costs no promise, and a {@linkcode GuardStep} costs no
 * function either. The last step must answer without calling `next`; calling `next` past the
 * end, or twice in one step, throws (or rejects, when the step had already gone asynchronous).
 *
 * @example
 * ```ts
 * import { composeEager } from "./chain.ts";
 * const chain = composeEager<{ seen: string[] }>(
 *   (context, next) => {
 *     context.seen.push("first");
 *     return next();
 *   },
 *   () => new Response("done"),
 * );
 * const response = chain({ seen: [] });
 * console.log(response instanceof Promise); // false
 * ```
 */
export function composeEager<C>(...steps: readonly EagerStep<C>[]): EagerChain<C> {
  const count = steps.length;
  const guards = steps.map((step) => (step as Partial<GuardStep<C>>).guard ?? null);

  function runFrom(context: C, start: number): Response | Promise<Response> {
    for (let index = start; index < count; index++) {
      const guard = guards[index];
      if (guard !== null) {
        const pending = guard(context);
        if (pending instanceof Promise) {
          const rest = index + 1;
          return pending.then(() => runFrom(context, rest));
        }
        continue;
      }
      if (index === count - 1) return steps[index](context, pastTheEnd);
      let called = false;
      const rest = index + 1;
      return steps[index](context, () => {
        if (called) throw calledTwice();
        called = true;
        return runFrom(context, rest);
      });
    }
    throw endedWithoutResponse();
  }

  return function run(context: C): Response | Promise<Response> {
    return runFrom(context, 0);
  };
}

function pastTheEnd(): never {
  throw endedWithoutResponse();
}

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
      if (index <= called) return Promise.reject(calledTwice());
      called = index;
      if (index >= count) return Promise.reject(endedWithoutResponse());
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
