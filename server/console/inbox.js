// The inbox: every pending tool request the signed-in principal may see, across runs, kept
// current without a reload. An answered request leaves at once on the console that answered,
// and on every other console when the activity feed tells of it.

import { call } from "./api.js";
import { freshId, h } from "./dom.js";
import { requestItem, requestKey, tickCountdowns } from "./requests.js";

/** Pending requests of every run the caller may see. */
async function loadPending(signal) {
  const page = await call("GET", "v1/runs", {
    query: { state: "requires_action", limit: 100 },
    signal,
  });
  const lists = await Promise.all(page.runs.map(async (run) => {
    try {
      const { pending } = await call("GET", `v1/runs/${encodeURIComponent(run.runId)}/pending`, {
        signal,
      });
      return pending.map((request) => ({
        ...request,
        runId: run.runId,
        title: run.title,
        agentId: run.agentId,
        principalId: run.principalId,
      }));
    } catch (error) {
      if (error.code === "runNotFound") return [];
      throw error;
    }
  }));
  return lists.flat();
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
        entry = { element: requestItem(ctx, request, { showRun: true, onGone: gone }) };
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

  refresh();
  const poll = setInterval(refresh, 1_500);
  const ticker = setInterval(() => tickCountdowns(list), 1_000);
  return {
    element,
    stop() {
      controller.abort();
      clearInterval(poll);
      clearInterval(ticker);
    },
  };
}
