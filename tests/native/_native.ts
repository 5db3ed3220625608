/**
 * The harness of the `/provider` tests: the gateway harness (fake provider, in-process runtime
 * server: `tests/gateway/_harness.ts`) served over HTTP on a loopback port, and the vendor's own
 * SDK pointed at `{url}/provider` with a principal's bearer as its API key.
 *
 * @module
 */
import Vendor from "@anthropic-ai/sdk";
import { type Gateway, type GatewayOptions, startGateway } from "../gateway/_harness.ts";

/** The vendor SDK's client. */
export type VendorClient = InstanceType<typeof Vendor>;

/** A gateway served over HTTP, with the requests it received. */
export interface NativeGateway {
  /** The gateway harness (fake provider, server, store, `issue`, `request`). */
  gateway: Gateway;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Every request the HTTP listener received, as `METHOD path`. */
  received: string[];
  /** Every answer's headers and, unless it is an event stream, its body text. */
  answered: { headers: string; text: string }[];
  /** The vendor SDK with `bearer` as its API key (retries as given, default the SDK's 2). */
  sdk(bearer: string, options?: { maxRetries?: number }): VendorClient;
  /** Stops the listener, then the gateway. */
  close(): Promise<void>;
}

/** Serves an already started gateway harness over HTTP. */
export function serveGateway(gateway: Gateway): Omit<NativeGateway, "close"> & {
  stop(): Promise<void>;
} {
  const received: string[] = [];
  const answered: { headers: string; text: string }[] = [];
  const listener = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      received.push(`${request.method} ${new URL(request.url).pathname}`);
      const response = await gateway.server.handler(request);
      const headers = JSON.stringify([...response.headers]);
      if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        answered.push({ headers, text: "" });
        return response;
      }
      const text = await response.text();
      answered.push({ headers, text });
      return new Response(text === "" ? null : text, response);
    },
  );
  const url = `http://127.0.0.1:${listener.addr.port}`;
  return {
    gateway,
    url,
    received,
    answered,
    sdk: (bearer, options = {}) =>
      new Vendor({
        apiKey: bearer,
        baseURL: `${url}/provider`,
        ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
      }),
    async stop() {
      await listener.shutdown();
    },
  };
}

/** Starts a fake provider and a gateway in front of it, served over HTTP. */
export async function startNative(options: GatewayOptions = {}): Promise<NativeGateway> {
  const gateway = await startGateway(options);
  const served = serveGateway(gateway);
  return {
    ...served,
    async close() {
      await served.stop();
      await gateway.close();
    },
  };
}

/** Waits until `predicate` holds (checked every 20 ms, at most `ms`), else fails with `what`. */
export async function until(
  predicate: () => boolean | Promise<boolean>,
  what: string,
  ms = 5_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A user message event in the provider's shape. */
export function userMessage(
  text: string,
): { type: "user.message"; content: { type: "text"; text: string }[] } {
  return { type: "user.message", content: [{ type: "text", text }] };
}

/** Whether `value` is an instance of `kind` (without narrowing a test's loose type). */
// deno-lint-ignore ban-types
export function isA(value: unknown, kind: Function): boolean {
  return value instanceof kind;
}

/** A principal that may read and write sessions, its SDK, and a session it created. */
export interface WriterSession {
  bearer: string;
  principalId: string;
  sdk: VendorClient;
  /** The session, as the create answered it. */
  // deno-lint-ignore no-explicit-any
  session: any;
}

/**
 * Issues a principal with `session:read` and `session:write` on `native` and creates a session
 * with its SDK: the harness's agent and environment, and `fields` beside them.
 */
export async function writerSession(
  native: Pick<NativeGateway, "gateway" | "sdk">,
  fields: Record<string, unknown> = {},
): Promise<WriterSession> {
  const { gateway } = native;
  const { bearer, principalId } = await gateway.issue(["session:read", "session:write"]);
  const sdk = native.sdk(bearer);
  const session = await sdk.beta.sessions.create({
    agent: gateway.agentId,
    environment_id: gateway.environmentId,
    ...fields,
  } as never);
  return { bearer, principalId, sdk, session };
}

/**
 * A writer's session (as {@linkcode writerSession}) whose first turn asks to run `bash` and
 * waits for a confirmation, with that tool use's id.
 */
export async function askingSession(
  native: Pick<NativeGateway, "gateway" | "sdk">,
): Promise<WriterSession & { toolUseId: string }> {
  native.gateway.fake.managedAgents!.script = () => [
    { type: "agent.tool_use", name: "bash", input: { command: "ls" }, evaluated_permission: "ask" },
  ];
  const created = await writerSession(native, { initial_events: [userMessage("list files")] });
  const toolUse = native.gateway.fake.managedAgents!.sessions.get(created.session.id)!.events
    .find((event) => event.type === "agent.tool_use")!;
  return { ...created, toolUseId: toolUse.id as string };
}
