/**
 * Helpers of the notification tests: a local receiver (whose answers may be held), a gateway that
 * sends to private targets with short retry delays and polls, and subscribing.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { RuntimeTestHooks } from "../../server/test_hooks.ts";
import { type Gateway, type GatewayOptions, startGateway } from "./_harness.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** One request a receiver got. */
export interface Received {
  headers: Headers;
  body: string;
  /** When it arrived (`performance.now()`). */
  at: number;
}

/**
 * A local receiver: records every request; `answer` decides each status (default 204), and may
 * take its time (a promise).
 */
export function receiver(
  answer: (received: Received, index: number) => number | Promise<number> = () => 204,
) {
  const requests: Received[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const received = {
      headers: request.headers,
      body: await request.text(),
      at: performance.now(),
    };
    requests.push(received);
    return new Response(null, { status: await answer(received, requests.length - 1) });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    requests,
    close: () => server.shutdown(),
  };
}

/** Short retry delays and polls. */
export const FAST: RuntimeTestHooks = {
  notifications: { retryDelaysMs: [40, 40, 40], pollMs: 50 },
};

/** A gateway with {@linkcode FAST} hooks that may send to private (local) targets. */
export function gatewayWith(options: GatewayOptions = {}): Promise<Gateway> {
  return startGateway({
    answerTestHooks: FAST,
    ...options,
    serverOptions: {
      notifications: { allowPrivateTargets: true },
      publicUrl: "https://runtime.example",
      ...options.serverOptions,
    },
  });
}

/** Subscribes as `bearer`; answers the subscription's id, its secret and the answer's body. */
export async function subscribe(
  gateway: Gateway,
  bearer: string,
  body: Json,
): Promise<{ subscriptionId: string; secret: string; json: Json }> {
  const answer = await gateway.request("POST", "/v1/webhook-subscriptions", { bearer, body });
  assert.equal(answer.status, 201, answer.text);
  return {
    subscriptionId: answer.json.subscriptionId,
    secret: answer.json.secret,
    json: answer.json,
  };
}

/** Subscribes `url` to `run.completed` as `bearer`, then starts a run; answers the subscription. */
export async function subscribedRun(
  gateway: Gateway,
  bearer: string,
  url: string,
): Promise<string> {
  const { subscriptionId } = await subscribe(gateway, bearer, { url, events: ["run.completed"] });
  const started = await gateway.request("POST", "/v1/runs", { bearer, body: { input: "go" } });
  assert.equal(started.status, 201, started.text);
  return subscriptionId;
}
