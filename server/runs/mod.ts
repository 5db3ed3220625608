/**
 * The run gateway: provider settings and the one provider client, principals' run policy and
 * spend limits (`spend.ts`), and the service that starts and steers runs for principals, with what it is built from: the call
 * it takes (`call.ts`) and how provider failures are answered (`provider_failure.ts`). The rules
 * of a run's state (`run_state.ts`), tool answers (`answers.ts`, `pending.ts`) and run tails
 * (`tail.ts`) are internal to the server: their routes are the public face.
 *
 * @module
 */
export * from "./provider.ts";
export * from "./policy.ts";
export type { SpendHolder, SpendLimits } from "./spend.ts";
export * from "./activity.ts";
export * from "./call.ts";
export * from "./provider_failure.ts";
export {
  DEFAULT_SERVICE_MAX_ACTIVE_RUNS,
  publicRun,
  readsEveryRun,
  RESERVATION_LEASE_MS,
  RunGateway,
  type RunGatewayOptions,
  type SentToRun,
  type StartAnswer,
  type StartedRun,
} from "./runs.ts";
export * from "./start_request.ts";
export type { SessionView } from "./_open_session.ts";
