/**
 * What every peer server shares: the port from the command line and the loopback bind.
 *
 * @module
 */

/**
 * Options for `Deno.serve` on 127.0.0.1 at the port given as the script's first argument.
 *
 * @example
 * ```ts ignore
 * import { listenOptions } from "./_listen.ts";
 * Deno.serve(listenOptions(), () => new Response("ok"));
 * ```
 */
export function listenOptions(): Deno.ServeTcpOptions {
  const port = Number(Deno.args[0] ?? "0");
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new TypeError("The first argument must be a port number");
  }
  return { hostname: "127.0.0.1", port, onListen() {} };
}

/**
 * Stops the server on SIGTERM or SIGINT so the benchmark can end it cleanly.
 *
 * @example
 * ```ts ignore
 * import { listenOptions, stopOnSignal } from "./_listen.ts";
 * stopOnSignal(Deno.serve(listenOptions(), () => new Response("ok")));
 * ```
 */
export function stopOnSignal(server: Deno.HttpServer, cleanup?: () => void): void {
  const stop = () => {
    server.shutdown().finally(() => {
      cleanup?.();
      Deno.exit(0);
    });
  };
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
}
