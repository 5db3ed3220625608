/**
 * A route body schema loaded on the first body it checks. The schemas are zod schemas, and
 * loading zod costs about 25 ms of startup (measured: `deno run` of an empty module 0.02 s, of
 * one importing zod and parsing once 0.04 to 0.05 s); a server that never receives a body never
 * pays it, and the first body pays it once. The JSON rule awaits {@linkcode LazyBodySchema.load}
 * before its first check.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isLazyBodySchema, lazyBodySchema } from "./lazy.ts";
 * const schema = lazyBodySchema(async () => (await import("./runs.ts")).startRunBody);
 * assert.equal(isLazyBodySchema(schema), true);
 * const loaded = await schema.load();
 * assert.equal(loaded.safeParse({ input: "hi" }).success, true);
 * assert.equal(schema.safeParse({ input: "" }).success, false);
 * ```
 *
 * @module
 */
import type { BodySchema } from "../router.ts";

/** A body schema that must be loaded before its first `safeParse`. */
export interface LazyBodySchema extends BodySchema {
  /** Loads the schema (once; later calls return the same promise). */
  load(): Promise<BodySchema>;
  /** The schema once loaded, else null. */
  loaded(): BodySchema | null;
}

/**
 * Wraps a loader of a body schema. `safeParse` before `load` settled throws: the JSON rule
 * always loads first.
 */
export function lazyBodySchema(loader: () => Promise<BodySchema>): LazyBodySchema {
  let loading: Promise<BodySchema> | null = null;
  let loaded: BodySchema | null = null;
  return {
    load(): Promise<BodySchema> {
      loading ??= loader().then((schema) => loaded = schema);
      return loading;
    },
    loaded(): BodySchema | null {
      return loaded;
    },
    safeParse(value: unknown) {
      if (loaded === null) throw new Error("A lazy body schema was used before it was loaded");
      return loaded.safeParse(value);
    },
  };
}

/** Loads every lazy body schema of `routes`, so their schemas can be read synchronously. */
export async function loadBodySchemas(
  routes: readonly { readonly body?: BodySchema }[],
): Promise<void> {
  await Promise.all(
    routes.map((route) =>
      route.body !== undefined && isLazyBodySchema(route.body) ? route.body.load() : null
    ),
  );
}

/** Whether a body schema is lazy (has `load`). */
export function isLazyBodySchema(schema: BodySchema): schema is LazyBodySchema {
  return typeof (schema as Partial<LazyBodySchema>).load === "function";
}
