/**
 * The run gateway: provider settings and the one provider client, principals' run policy, and
 * the service that starts and steers runs for principals. Tool answers (`answers.ts`, `pending.ts`)
 * are internal to the server: their routes are the public face.
 *
 * @module
 */
export * from "./provider.ts";
export * from "./policy.ts";
export * from "./activity.ts";
export {
  DEFAULT_SERVICE_MAX_ACTIVE_RUNS,
  publicRun,
  readsEveryRun,
  RESERVATION_LEASE_MS,
  RunGateway,
  type RunGatewayOptions,
} from "./runs.ts";
