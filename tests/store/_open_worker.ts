/**
 * A worker that opens the KV store at the path it is sent, reads from it and closes it, and
 * answers "ok" or the error: `kv_test.ts` starts several at once, as `deno serve --parallel`
 * starts its workers.
 *
 * @module
 */
import { openKvStore } from "../../server/store/mod.ts";

/** The worker's own scope: the project is checked with the window's types, not a worker's. */
const scope = self as unknown as {
  onmessage: ((event: MessageEvent<string>) => void) | null;
  postMessage(message: string): void;
};

scope.onmessage = async (event: MessageEvent<string>) => {
  try {
    const store = await openKvStore({ path: event.data, namespace: "0".repeat(32) });
    await store.principals.get(crypto.randomUUID());
    await store.close();
    scope.postMessage("ok");
  } catch (error) {
    scope.postMessage(`${error}; cause: ${(error as Error).cause}`);
  }
};
