// One pending tool request as a list item, in the inbox and on a run's page: the tool's name,
// its input as text, the run, who started it, the time left before the fail-closed deny, and
// what the signed-in principal may do with it: "Allow" and "Deny" (with an optional reason) for
// a confirmation when it holds `session:approve`, a result form for a custom tool call of its own
// run. Each answer is one POST with a fresh idempotency key; "already answered" (409) and "no
// longer pending" (404) say so and take the item away.

import { call, serviceNow } from "./api.js";
import { append, formatDuration, freshId, h, inputText, runHref, timeElement } from "./dom.js";

/** The longest deny reason the service takes. */
const MAX_DENY_MESSAGE = 4096;

/** A request's key among others: its run and tool-use id. */
export function requestKey(request) {
  return `${request.runId}\n${request.toolUseId}`;
}

/** The words for a run in a sentence: its title, else its id. */
export function runLabel(request) {
  return request.title ? `"${request.title}"` : request.runId;
}

/**
 * Updates every countdown under `root` (elements with `data-denied-at`) to the time left on the
 * service's clock.
 */
export function tickCountdowns(root) {
  const now = serviceNow();
  for (const element of root.querySelectorAll("[data-denied-at]")) {
    const left = Date.parse(element.getAttribute("data-denied-at")) - now;
    element.textContent = left > 0 ? formatDuration(left) : "now (the service is denying it)";
  }
}

function verbOf(result) {
  if (result === "allow") return "allowed";
  if (result === "deny") return "denied";
  if (result === "error") return "answered with an error";
  return "answered";
}

/**
 * The list item of `request` (a `GET /v1/pending` entry: `runId`, `toolUseId`, `kind`, `name`,
 * `input`, `requestedAt`, and when known `deniedAt`, `title`, `agentId`, `principalId`,
 * `principalName`). `options.showRun` adds the run's details; `options.onGone(request, how)` is
 * called once the request is answered here or found answered.
 */
export function requestItem(ctx, request, options = {}) {
  const headingId = freshId("request");
  const status = h("p", { class: "item-status", role: "status" });
  const item = h("li", { class: "request", "aria-labelledby": headingId });
  const confirmation = request.kind === "confirmation";
  const details = [];
  if (options.showRun) {
    details.push(
      h("dt", {}, "Run"),
      h("dd", {}, h("a", { href: runHref(request.runId) }, request.title || request.runId)),
    );
    if (request.agentId) details.push(h("dt", {}, "Agent"), h("dd", {}, request.agentId));
    if (request.principalId) {
      details.push(
        h("dt", {}, "Started by"),
        h("dd", {}, ctx.principalLabel(request.principalId, request.principalName)),
      );
    }
  }
  details.push(h("dt", {}, "Requested"), h("dd", {}, timeElement(request.requestedAt)));
  if (request.deniedAt) {
    details.push(
      h("dt", {}, confirmation ? "Denied automatically in" : "Fails automatically in"),
      h("dd", {}, h("span", { class: "countdown", "data-denied-at": request.deniedAt })),
    );
  }
  append(item, [
    h(
      "h3",
      { id: headingId },
      request.name,
      " ",
      h("span", { class: "kind" }, confirmation ? "confirmation" : "custom tool"),
    ),
    h("dl", { class: "facts" }, details),
    h("p", { class: "label" }, "Input"),
    h("pre", { class: "input" }, inputText(request.input)),
    request.inputTruncated
      ? h("p", { class: "note" }, "The input is cut at 16 KiB: the run's page has all of it.")
      : null,
  ]);

  let gone = false;
  function leave(how) {
    if (gone) return;
    gone = true;
    options.onGone?.(request, how);
  }

  function described(element) {
    element.setAttribute("aria-describedby", headingId);
    return element;
  }

  const buttons = [];
  function busy(on) {
    for (const button of buttons) button.disabled = on;
    item.setAttribute("aria-busy", on ? "true" : "false");
  }

  async function answer(path, body, done) {
    busy(true);
    status.textContent = "Sending…";
    try {
      const answered = await call("POST", path, { body });
      status.textContent = "";
      ctx.announce(done(answered));
      leave({ answered: true, result: answered.result, answeredBy: answered.answeredBy });
    } catch (error) {
      if (error.code === "alreadyAnswered") {
        const by = error.body.answeredBy;
        await learnAnswerer(by);
        ctx.notice(
          `Already answered: ${request.name} in run ${runLabel(request)} was ${
            verbOf(error.body.result)
          }${by ? ` by ${ctx.principalLabel(by)}` : ""}.`,
        );
        leave({ answered: true, result: error.body.result, answeredBy: by });
      } else if (error.code === "toolUseNotFound" || error.code === "runNotFound") {
        ctx.notice(`${request.name} in run ${runLabel(request)} is no longer pending.`);
        leave({ answered: false });
      } else if (ctx.signedOutBy(error)) {
        // The console signs out and says why.
      } else {
        status.textContent = `Not sent: ${error.message}`;
        busy(false);
      }
    }
  }

  /**
   * Learns the name of whoever answered first (the refusal names its id only). Its answer is
   * listed once it reached the provider, which may be a moment after the refusal: a few reads.
   */
  async function learnAnswerer(by) {
    if (typeof by !== "string" || by === "runtime" || by === "external") return;
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const { answers } = await call("GET", path("answers"));
        const found = answers.find((answer) => answer.toolUseId === request.toolUseId);
        if (found !== undefined) {
          ctx.principalLabel(by, found.answeredByName);
          return;
        }
      } catch {
        return; // The id stands in for the name.
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  }

  const path = (what) => `v1/runs/${encodeURIComponent(request.runId)}/${what}`;

  if (confirmation && ctx.can.approve) {
    const reasonId = freshId("reason");
    const reason = h("input", {
      id: reasonId,
      type: "text",
      maxlength: MAX_DENY_MESSAGE,
      autocomplete: "off",
    });
    const sendDeny = described(h("button", { type: "submit" }, "Send deny"));
    const cancel = described(h("button", { type: "button", class: "secondary" }, "Cancel"));
    const denyForm = h(
      "form",
      { class: "deny", hidden: true, "aria-label": `Deny ${request.name}` },
      h("label", { for: reasonId }, "Reason (optional)"),
      reason,
      h("div", { class: "actions" }, sendDeny, cancel),
    );
    const allow = described(h("button", { type: "button", class: "allow" }, "Allow"));
    const deny = described(h("button", { type: "button", class: "deny" }, "Deny"));
    buttons.push(allow, deny, sendDeny, cancel);
    allow.addEventListener("click", () =>
      answer(
        path("tool-confirmations"),
        { toolUseId: request.toolUseId, result: "allow" },
        () => `Allowed ${request.name} in run ${runLabel(request)}.`,
      ));
    deny.addEventListener("click", () => {
      denyForm.hidden = false;
      reason.focus();
    });
    cancel.addEventListener("click", () => {
      denyForm.hidden = true;
      reason.value = "";
      deny.focus();
    });
    denyForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const message = reason.value.trim();
      answer(
        path("tool-confirmations"),
        {
          toolUseId: request.toolUseId,
          result: "deny",
          ...(message === "" ? {} : { denyMessage: message }),
        },
        () => `Denied ${request.name} in run ${runLabel(request)}.`,
      );
    });
    item.append(h("div", { class: "actions" }, allow, deny), denyForm);
  } else if (confirmation) {
    item.append(
      h("p", { class: "note" }, "Waiting for an approver (needs session:approve)."),
    );
  } else if (ctx.mayRespond(request.principalId)) {
    const resultId = freshId("result");
    const failedId = freshId("failed");
    const text = h("textarea", { id: resultId, rows: 3, required: true });
    const failed = h("input", { id: failedId, type: "checkbox" });
    const send = described(h("button", { type: "submit" }, "Send result"));
    buttons.push(send);
    const form = h(
      "form",
      { class: "result", "aria-label": `Result of ${request.name}` },
      h("label", { for: resultId }, "Result"),
      text,
      h("div", { class: "check" }, failed, h("label", { for: failedId }, "The tool failed")),
      h("div", { class: "actions" }, send),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      answer(
        path("custom-tool-results"),
        {
          toolUseId: request.toolUseId,
          content: [{ type: "text", text: text.value }],
          ...(failed.checked ? { isError: true } : {}),
        },
        () => `Sent the result of ${request.name} in run ${runLabel(request)}.`,
      );
    });
    item.append(form);
  } else {
    item.append(h("p", { class: "note" }, "Waiting for the run's client to send the result."));
  }
  item.append(status);
  tickCountdowns(item);
  return item;
}
