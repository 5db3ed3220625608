// The inbox: every pending tool request the signed-in principal may see, across runs, kept
// current without a reload. An answered request leaves at once on the console that answered,
// and on every other console when the activity feed tells of it.

import { call } from "./api.js";
import { freshId, h } from "./dom.js";
import { requestItem, requestKey, tickCountdowns } from "./requests.js";

/** Pages of `GET /v1/pending` read at most at once (runs per page: 100). */
const MAX_PAGES = 20;
/** How often the inbox is read again besides the feed's news, in ms: a safety net. */
const RESYNC_MS = 30_000;

/** Every pending request the caller may see (`GET /v1/pending`, page by page), soonest denied first. */
async function loadPending(signal) {
  const requests = [];
  let cursor = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const answer = await call("GET", "v1/pending", { query: { limit: 100, cursor }, signal });
    requests.push(...answer.pending);
    cursor = answer.nextCursor;
    if (cursor === null) break;
  }
  return requests.sort((a, b) =>
    a.deniedAt.localeCompare(b.deniedAt) || a.requestedAt.localeCompare(b.requestedAt)
  );
}

/** The inbox view: `{ element, stop() }`. */
export function inboxView(ctx) {
  const controller = new AbortController();
  const signal = controller.signal;
  const headingId = freshId("inbox");
  const list = h("ul", { class: "requests", "aria-labelledby": headingId });
  const empty = h("p", { class: "empty", hidden: true }, "Nothing is waiting for an answer.");
  const loading = h("p", { class: "loading" }, "Loading…");
  const failure = h("p", { class: "error", role: "alert", hidden: true });
  const feed = h("p", { class: "feed", "data-feed-status": "" }, ctx.feedStatusText());
  const element = h(
    "section",
    { class: "inbox" },
    h("h2", { id: headingId, tabindex: "-1" }, "Inbox"),
    h(
      "p",
      { class: "hint" },
      ctx.can.approve
        ? "Tool requests of every run waiting for an answer. Unanswered confirmations are denied automatically when their time runs out."
        : "Tool requests of your runs waiting for an answer. Confirmations need an approver.",
    ),
    feed,
    loading,
    failure,
    empty,
    list,
  );
  /** Shown items by request key. */
  const shown = new Map();

  function gone(request) {
    const key = requestKey(request);
    const entry = shown.get(key);
    if (entry === undefined) return;
    shown.delete(key);
    entry.element.remove();
    settle();
  }

  function settle() {
    empty.hidden = shown.size > 0 || !loading.hidden;
    ctx.setInboxCount(shown.size);
  }

  function render(requests) {
    const keys = new Set(requests.map(requestKey));
    for (const [key, entry] of shown) {
      if (!keys.has(key)) {
        shown.delete(key);
        entry.element.remove();
      }
    }
    let previous = null;
    for (const request of requests) {
      const key = requestKey(request);
      let entry = shown.get(key);
      if (entry === undefined) {
        entry = {
          runId: request.runId,
          element: requestItem(ctx, request, { showRun: true, onGone: gone }),
        };
        shown.set(key, entry);
      }
      const before = previous === null ? list.firstChild : previous.nextSibling;
      if (before !== entry.element) list.insertBefore(entry.element, before);
      previous = entry.element;
    }
    loading.hidden = true;
    settle();
  }

  let running = null;
  let again = false;
  /** Reads the inbox again; calls while one read runs fold into one more read after it. */
  function refresh() {
    if (running !== null) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          render(await loadPending(signal));
          failure.hidden = true;
        } catch (error) {
          if (signal.aborted || ctx.signedOutBy(error)) return;
          failure.textContent = `The inbox could not be read: ${error.message}`;
          failure.hidden = false;
        }
      } while (again && !signal.aborted);
    })().finally(() => running = null);
    return running;
  }

  /** The feed's news: an answer takes its item away at once; anything else reads again. */
  function onActivity(event) {
    if (event === null) return refresh();
    if (event.type === "tool.answered") {
      gone({ runId: event.runId, toolUseId: event.toolUseId });
    } else if (event.type === "tool.pending") refresh();
    else if (event.type === "run.state") {
      for (const entry of shown.values()) {
        if (entry.runId === event.runId) return refresh();
      }
    }
  }
  const unsubscribe = ctx.onActivity(onActivity);
  refresh();
  const resync = setInterval(refresh, RESYNC_MS);
  const ticker = setInterval(() => tickCountdowns(list), 1_000);
  return {
    element,
    stop() {
      controller.abort();
      unsubscribe();
      clearInterval(resync);
      clearInterval(ticker);
    },
  };
}
