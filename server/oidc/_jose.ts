/**
 * The JOSE library, loaded on the first verification. The service's startup time is measured
 * (`deno task bench --only startup`) and a server that never sees an ID token must not pay for
 * loading `jose`; with `--unstable-lazy-dynamic-imports` (the tasks' flag) Deno does not even
 * resolve it before this line runs. See "Lazy dynamic imports" in `docs/design.md`.
 *
 * @module
 */
import type * as Jose from "jose";

/** The `jose` module's exports. */
export type JoseModule = typeof Jose;

let loading: Promise<JoseModule> | null = null;

/** Loads `jose` once; a failed load is tried again by the next call. */
export function loadJose(): Promise<JoseModule> {
  loading ??= import("jose").catch((error: unknown) => {
    loading = null;
    throw error;
  });
  return loading;
}
