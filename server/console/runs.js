// Runs: a list filtered by state and by who started them, and a run's page, which follows the
// run's event log live (messages, tool calls, their answers with who gave them, results, the
// state) and resumes with `Last-Event-ID` after a dropped connection.

import { call, follow, SERVICE } from "./api.js";
import { freshId, h, inputText, runHref, timeElement } from "./dom.js";
import { pagedTable } from "./paged.js";
import { requestItem, requestKey, tickCountdowns } from "./requests.js";

/** Terminal run states: the event stream ends there. */
const TERMINAL = new Set(["completed", "failed", "cancelled"]);
/** The run state each terminal event leaves. */
const ENDED_BY = {
  "run.completed": "completed",
  "run.failed": "failed",
  "run.cancelled": "cancelled",
};
/** Timeline entries a run page keeps; older ones give way (a note says so). */
const MAX_ENTRIES = 2_000;

/** The runs list view: `{ element, stop() }`. */
export function runsView(ctx, query) {
  const seesOthers = ctx.can.approve || ctx.can.admin;
  return pagedTable(ctx, {
    title: "Runs",
    what: "runs",
    route: "#/runs",
    query,
    filters: [
      {
        name: "state",
        label: "State",
        options: [["", "Any state"], ...SERVICE.runStates.map((state) => [state, state])],
      },
      ...(seesOthers
        ? [{ name: "principalId", label: "Started by", placeholder: "principal id" }]
        : []),
    ],
    columns: ["Run", "State", "Agent", "Started by", "Created", "Updated"],
    row: (run) => [
      h("td", {}, h("a", { href: runHref(run.runId) }, run.title || run.runId)),
      h("td", {}, h("span", { class: `state state-${run.state}` }, run.state)),
      h("td", {}, run.agentId),
      h("td", {}, ctx.principalLabel(run.principalId)),
      h("td", {}, timeElement(run.createdAt)),
      h("td", {}, timeElement(run.updatedAt)),
    ],
    async read(values, cursor, signal) {
      const page = await call("GET", "v1/runs", {
        query: { limit: 50, state: values.state, principalId: values.principalId, cursor },
        signal,
      });
      return { items: page.runs, nextCursor: page.nextCursor };
    },
  });
}

/** What an answer says, for the timeline. */
function answerText(ctx, answer) {
  const verb = answer.result === "allow"
    ? "Allowed"
    : answer.result === "deny"
    ? "Denied"
    : answer.result === "error"
    ? "Answered with an error"
    : "Answered";
  const by = answer.answeredBy === "runtime"
    ? "the runtime (the time to answer ran out)"
    : ctx.principalLabel(answer.answeredBy, answer.answeredByName);
  return `${verb} by ${by}`;
}

/** A run's page: `{ element, stop() }`. */
export function runView(ctx, runId) {
  const controller = new AbortController();
  const signal = controller.signal;
  const headingId = freshId("run");
  const heading = h("h2", { id: headingId, tabindex: "-1" }, runId);
  const facts = h("dl", { class: "facts" });
  const connection = h("p", { class: "connection", role: "status" }, "Connecting…");
  const pendingList = h("ul", { class: "requests", "aria-label": "Waiting for an answer" });
  const pendingSection = h(
    "section",
    { class: "pending", hidden: true },
    h("h3", {}, "Waiting for an answer"),
    pendingList,
  );
  const timeline = h("ol", { class: "timeline", "aria-label": "Events" });
  const dropped = h("p", { class: "note", hidden: true }, "Older events are not shown.");
  const failure = h("p", { class: "error", role: "alert", hidden: true });
  const element = h(
    "section",
    { class: "run", "aria-labelledby": headingId },
    h("p", {}, h("a", { href: "#/runs" }, "All runs")),
    heading,
    failure,
    facts,
    pendingSection,
    h("h3", {}, "Events"),
    connection,
    dropped,
    timeline,
  );

  let run = null;
  /** Tool calls on the timeline by tool-use id: where their answer and result go. */
  const calls = new Map();
  /** Answers known before their tool call is on the timeline. */
  const answers = new Map();
  let draft = null;
  let lastEventId;
  let ended = false;
  let following = false;

  function renderFacts() {
    if (run === null) return;
    heading.textContent = run.title || run.runId;
    const rows = [
      ["Run id", run.runId],
      ["State", h("span", { class: `state state-${run.state}` }, run.state)],
      ["Agent", run.agentId],
      ["Started by", ctx.principalLabel(run.principalId)],
      ["Created", timeElement(run.createdAt)],
    ];
    if (run.endedAt) rows.push(["Ended", timeElement(run.endedAt)]);
    facts.replaceChildren(
      ...rows.flatMap(([name, value]) => [h("dt", {}, name), h("dd", {}, value)]),
    );
  }

  async function loadRun() {
    try {
      run = await call("GET", `v1/runs/${encodeURIComponent(runId)}`, { signal });
      renderFacts();
      failure.hidden = true;
    } catch (error) {
      if (signal.aborted || ctx.signedOutBy(error)) return;
      failure.textContent = error.code === "runNotFound"
        ? "No such run, or not one you may read."
        : `The run could not be read: ${error.message}`;
      failure.hidden = false;
    }
  }

  const shownPending = new Map();
  async function loadPending() {
    try {
      const { pending } = await call("GET", `v1/runs/${encodeURIComponent(runId)}/pending`, {
        signal,
      });
      const keys = new Set();
      for (const request of pending) {
        const full = {
          ...request,
          runId,
          title: run?.title,
          agentId: run?.agentId,
          principalId: run?.principalId,
        };
        const key = requestKey(full);
        keys.add(key);
        if (!shownPending.has(key)) {
          const item = requestItem(ctx, full, {
            onGone: (gone, how) => {
              shownPending.get(key)?.remove();
              shownPending.delete(key);
              pendingSection.hidden = shownPending.size === 0;
              if (how.answered && how.answeredBy) {
                showAnswer(gone.toolUseId, {
                  result: how.result,
                  answeredBy: how.answeredBy,
                });
              }
            },
          });
          shownPending.set(key, item);
          pendingList.append(item);
        }
      }
      for (const [key, item] of shownPending) {
        if (!keys.has(key)) {
          item.remove();
          shownPending.delete(key);
        }
      }
      pendingSection.hidden = shownPending.size === 0;
    } catch (error) {
      if (signal.aborted || ctx.signedOutBy(error)) return;
      // The timeline still shows the run; its requests are read again with its next change.
    }
  }

  let answersRead = null;
  /** Reads who answered the run's tool requests (one read at a time). */
  function loadAnswers() {
    answersRead ??= call("GET", `v1/runs/${encodeURIComponent(runId)}/answers`, { signal })
      .then(({ answers: list }) => {
        for (const answer of list) showAnswer(answer.toolUseId, answer);
      }, (error) => {
        if (!signal.aborted) ctx.signedOutBy(error);
      }).finally(() => answersRead = null);
    return answersRead;
  }

  function entry(kind, ...children) {
    const item = h("li", { class: `event event-${kind}` }, ...children);
    timeline.append(item);
    while (timeline.childElementCount > MAX_ENTRIES) {
      timeline.firstElementChild.remove();
      dropped.hidden = false;
    }
    return item;
  }

  /** Shows who answered a tool call (now, or once the call is on the timeline). */
  function showAnswer(toolUseId, answer) {
    answers.set(toolUseId, answer);
    const slot = calls.get(toolUseId)?.answer;
    if (slot !== undefined) {
      slot.textContent = answerText(ctx, answer);
      slot.className = `answer answer-${answer.result}`;
    }
  }

  function onEvent(event) {
    if (event.type !== "message.delta" && draft !== null && event.type !== "message.completed") {
      draft = null;
    }
    switch (event.type) {
      case "run.started":
        entry("status", "Run started ", timeElement(event.at));
        break;
      case "run.status":
        entry("status", `State: ${event.state}`);
        if (run !== null) {
          run = { ...run, state: event.state };
          renderFacts();
        }
        if (event.state === "requires_action") loadPending();
        break;
      case "message.delta":
        if (draft === null) {
          draft = h("p", { class: "text" });
          entry("message draft", h("p", { class: "event-head" }, "Agent"), draft);
        }
        draft.textContent += event.text;
        break;
      case "message.completed":
        if (draft !== null) {
          draft.textContent = event.text;
          draft.parentElement?.classList.remove("draft");
          draft = null;
        } else {
          entry(
            "message",
            h("p", { class: "event-head" }, "Agent"),
            h("p", { class: "text" }, event.text),
          );
        }
        break;
      case "tool.call": {
        const answer = h(
          "p",
          { class: "answer" },
          event.needsConfirmation ? "Waiting for a confirmation" : "",
        );
        const result = h("p", { class: "result" });
        entry(
          "tool",
          h(
            "p",
            { class: "event-head" },
            `Tool call: ${event.name}`,
            event.needsConfirmation ? " (needs a confirmation)" : "",
          ),
          h("pre", { class: "input" }, inputText(event.input)),
          answer,
          result,
        );
        calls.set(event.id, { answer, result });
        if (answers.has(event.id)) showAnswer(event.id, answers.get(event.id));
        if (event.needsConfirmation) loadPending();
        break;
      }
      case "tool.result": {
        const slot = event.id === undefined ? undefined : calls.get(event.id)?.result;
        const text = event.isError ? "Result: error" : "Result: done";
        if (slot !== undefined) slot.textContent = text;
        else entry("tool", text);
        if (event.id !== undefined && !answers.has(event.id)) loadAnswers();
        break;
      }
      case "run.completed":
        entry("status", `Turn completed${event.stopReason ? ` (${event.stopReason})` : ""}`);
        break;
      case "run.failed":
        entry("status", `Run failed: ${event.error?.message ?? "unknown error"}`);
        break;
      case "run.cancelled":
        entry("status", "Run cancelled");
        break;
      default:
        entry("status", event.type);
    }
    if (Object.hasOwn(ENDED_BY, event.type)) {
      ended = true;
      if (run !== null) {
        run = { ...run, state: ENDED_BY[event.type] };
        renderFacts();
      }
      loadPending();
    } else if (event.type === "run.status") ended = false;
  }

  const STATUS = {
    connecting: "Connecting…",
    live: "Live",
    reconnecting: "Connection lost: reconnecting…",
    ended: "The run has ended.",
    failed: "The events could not be read.",
  };

  async function followEvents() {
    if (following) return;
    following = true;
    try {
      await follow(`v1/runs/${encodeURIComponent(runId)}/events`, {
        signal,
        lastEventId,
        onEvent: (event, frame) => {
          lastEventId = frame.id;
          onEvent(event);
        },
        onStatus: (status, error) => {
          connection.textContent = STATUS[status] ?? status;
          connection.dataset.status = status;
          if (error !== undefined) ctx.signedOutBy(error);
        },
        reconnect: () => !ended,
      });
    } finally {
      following = false;
    }
  }

  /** What the activity feed says of this run: read it again, follow it again once it resumes. */
  function onActivity(event) {
    if (event !== null && event.runId !== runId) return;
    if (event?.type === "tool.answered") showAnswer(event.toolUseId, event);
    if (event === null || event.type === "tool.pending" || event.type === "tool.answered") {
      loadPending();
    }
    if (event === null || event.type === "run.state") loadRun();
    if (ended && event?.type === "run.state" && !TERMINAL.has(event.state)) {
      // A follow-up message woke the run: follow its log again from where it ended.
      ended = false;
      followEvents();
    }
  }
  const unsubscribe = ctx.onActivity(onActivity);

  loadRun().then(() => {
    if (signal.aborted) return;
    loadPending();
    loadAnswers();
    followEvents();
  });
  const ticker = setInterval(() => tickCountdowns(pendingList), 1_000);
  return {
    element,
    stop() {
      controller.abort();
      clearInterval(ticker);
      unsubscribe();
    },
  };
}
