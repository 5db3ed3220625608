/**
 * The one seam around a store's calls: {@linkcode wrapStore} gives a store whose every part
 * method goes through a function of the caller's, built once per method when the store is
 * wrapped. The metrics time store calls through it (`measuredStore` in `server/metrics.ts`), and
 * tests stub or count calls through it; a method added to a part passes through it with no
 * change here or there.
 *
 * @module
 */
import { type Store, STORE_PARTS, type StorePartName } from "./types.ts";

/** Any method of a part, bound to its part. */
export type PartMethod = (...args: never[]) => unknown;

/**
 * Builds the function that stands for `method` of `part` in the wrapped store. `call` is the
 * method bound to the original part; returning it unchanged leaves the method as it is.
 */
export type WrapPartMethod = (
  part: StorePartName,
  method: string,
  call: PartMethod,
) => PartMethod;

/** The names of the methods of a part object: its own, then its classes', `constructor` aside. */
function methodNames(part: object): string[] {
  const names = new Set<string>();
  for (
    let holder: object | null = part;
    holder !== null && holder !== Object.prototype;
    holder = Object.getPrototypeOf(holder)
  ) {
    for (const name of Object.getOwnPropertyNames(holder)) {
      if (name === "constructor") continue;
      const value = Object.getOwnPropertyDescriptor(holder, name)?.value;
      if (typeof value === "function") names.add(name);
    }
  }
  return [...names];
}

/**
 * A store whose part methods are `wrap`'s functions, each built once here (nothing is looked up
 * per call). `kind` and `close` are the store's own. The original store is left as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openKvStore } from "./kv/mod.ts";
 * import { wrapStore } from "./wrap.ts";
 * const store = await openKvStore({ path: ":memory:", namespace: "n" });
 * const calls: string[] = [];
 * const counted = wrapStore(store, (part, method, call) => (...args) => {
 *   calls.push(`${part}.${method}`);
 *   return call(...args);
 * });
 * assert.equal(await counted.principals.get(crypto.randomUUID()), null);
 * assert.deepEqual(calls, ["principals.get"]);
 * await counted.close();
 * ```
 */
export function wrapStore(store: Store, wrap: WrapPartMethod): Store {
  const wrapped: Record<string, unknown> = {
    kind: store.kind,
    close: () => store.close(),
  };
  for (const name of STORE_PARTS) {
    const part = store[name] as unknown as Record<string, PartMethod>;
    const methods: Record<string, PartMethod> = {};
    for (const method of methodNames(part)) {
      methods[method] = wrap(name, method, part[method].bind(part));
    }
    wrapped[name] = Object.freeze(methods);
  }
  return Object.freeze(wrapped) as unknown as Store;
}
