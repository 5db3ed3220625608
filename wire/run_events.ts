/**
 * A run's events on the wire: each entry of a run's event log is a run event of the run contract
 * (`RunStreamEvent`, `client/contract.ts`) with its position and time, sent one per SSE frame
 * (`id: <seq>`, `event: <type>`, `data: <JSON>`) by `GET /v1/runs/{runId}/events`, or in pages
 * with `Accept: application/json`.
 *
 * @module
 */
import type { RunStreamEvent } from "../client/contract.ts";

/** An entry of a run's event log: the run event with its position and time. */
export type RunEvent = RunStreamEvent & {
  /** Position in the run's log, from 1, without gaps. */
  seq: number;
  /** RFC 3339 time the service recorded it. */
  at: string;
};

/** A page of a run's events (`GET /v1/runs/{runId}/events` with `Accept: application/json`). */
export interface RunEventPage {
  /** The events, in order. */
  events: RunEvent[];
  /** The seq to pass as `after` for the next page. */
  nextAfter: number;
  /** Whether the page reaches the log's end and the run has ended there. */
  terminal: boolean;
}
