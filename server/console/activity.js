// The activity feed: one `GET /v1/activity` stream per signed-in console, handed to every view
// that listens (the inbox, a run's page). It starts after the activity log's position when the
// console signed in and resumes with `Last-Event-ID` after a dropped connection, so no change is
// missed between reads.

import { call, follow } from "./api.js";

/**
 * Follows the feed for `ctx` until the answered function is called: each event goes to
 * `ctx.dispatch(event)`, the connection's state to `ctx.setFeedStatus(status)`.
 */
export function startActivity(ctx) {
  const controller = new AbortController();
  const signal = controller.signal;
  (async () => {
    let lastEventId;
    try {
      // Where the log stands now: the feed takes up from there, whatever a view reads after.
      const { activitySeq } = await call("GET", "v1/pending", { query: { limit: 1 }, signal });
      lastEventId = String(activitySeq);
    } catch (error) {
      if (signal.aborted || ctx.signedOutBy(error)) return;
      // Without the position the feed starts from now; views read everything again when live.
    }
    await follow("v1/activity", {
      signal,
      lastEventId,
      onEvent: (event) => ctx.dispatch(event),
      onStatus: (status, error) => {
        ctx.setFeedStatus(status);
        if (error !== undefined) ctx.signedOutBy(error);
      },
    });
  })();
  return () => controller.abort();
}
