/**
 * The fake provider of the tests, under the names the tests have always used: the provider
 * simulator of `@automation/runtime/testing` (`testing/simulator.ts`), re-exported. There is one
 * implementation; this file only names it.
 *
 * @module
 */
export {
  errorResponse,
  type Json,
  jsonResponse,
  ProviderSimulator as FakeProvider,
  type ProviderSimulatorOptions as FakeProviderOptions,
  type SimulatorFault as FakeFault,
  SimulatorHttpError as FakeHttpError,
  type SimulatorRequestLog as FakeRequestLog,
  type SimulatorRouteContext as FakeRouteContext,
  type SimulatorRouteHandler as FakeRouteHandler,
  type SimulatorRouteOptions as FakeRouteOptions,
  type SimulatorStreamSubscriber as FakeStreamSubscriber,
  sseFrame,
} from "../../testing/mod.ts";
