// The console's entry: sign-in and sign-out, who is signed in and what it may do, the activity
// feed every view listens to, and the views by the location's hash (`#/inbox`, `#/runs`,
// `#/runs/<runId>`, `#/audit`).

import { startActivity } from "./activity.js";
import { call, isSignedOut, restoreSignIn, signIn, signOut } from "./api.js";
import { auditView } from "./audit.js";
import { h } from "./dom.js";
import { inboxView } from "./inbox.js";
import { runsView, runView } from "./runs.js";

const $ = (id) => document.getElementById(id);
const signInView = $("sign-in");
const signInForm = $("sign-in-form");
const bearerInput = $("bearer");
const keepInput = $("keep");
const signInError = $("sign-in-error");
const nav = $("nav");
const auditLink = $("nav-audit");
const inboxCount = $("inbox-count");
const who = $("who");
const whoName = $("who-name");
const whoCapabilities = $("who-capabilities");
const signOutButton = $("sign-out");
const viewRoot = $("view");
const live = $("live");
const notices = $("notices");

/** Everything a view needs of the signed-in session. */
let ctx = null;
/** The view on screen: `{ element, stop() }`. */
let view = null;
/** Stops the activity feed. */
let stopActivity = null;

/** Says `text` to screen readers (and shows it in the status line). */
function announce(text) {
  live.textContent = "";
  // A fresh text node in a later task, so the same words are announced again.
  setTimeout(() => live.textContent = text, 50);
}

/** Shows a notice that stays until dismissed (or signed out), and announces it. */
function notice(text) {
  const dismiss = h("button", { type: "button", class: "secondary" }, "Dismiss");
  const item = h("li", { class: "notice" }, h("span", {}, text), " ", dismiss);
  dismiss.addEventListener("click", () => {
    item.remove();
    viewRoot.querySelector("[tabindex='-1']")?.focus();
  });
  notices.prepend(item);
  while (notices.childElementCount > 5) notices.lastElementChild.remove();
  announce(text);
}

/** What the feed's states read as. */
const FEED_STATUS = {
  connecting: "Live updates: connecting…",
  live: "Live updates: on",
  reconnecting: "Live updates: reconnecting…",
  failed: "Live updates: off (the activity feed was refused)",
};

function makeContext(me) {
  let feedStatus = "connecting";
  const has = (capability) => me.capabilities.includes(capability);
  const names = new Map();
  if (me.name) names.set(me.principalId, me.name);
  const listeners = new Set();
  return {
    me,
    can: {
      read: has("session:read"),
      write: has("session:write"),
      approve: has("session:approve"),
      admin: has("authority:admin"),
    },
    /** A principal as people read it: its name when known, else its id. */
    principalLabel(principalId, name) {
      if (typeof principalId !== "string") return "";
      if (typeof name === "string" && name !== "") names.set(principalId, name);
      const known = names.get(principalId);
      const label = known === undefined ? principalId : `${known} (${principalId.slice(0, 8)})`;
      return principalId === me.principalId ? `${label}, you` : label;
    },
    /** Whether the signed-in principal may send a custom tool's result on a run of `owner`. */
    mayRespond(owner) {
      return has("authority:admin") || (has("session:write") && owner === me.principalId);
    },
    announce,
    notice,
    setInboxCount(count) {
      inboxCount.textContent = count > 0 ? `(${count})` : "";
    },
    /** Signs out when `error` says the bearer no longer works; true when it did. */
    signedOutBy(error) {
      if (!isSignedOut(error)) return false;
      end("Your session ended: the bearer token is no longer accepted. Sign in again.");
      return true;
    },
    /**
     * Calls `listener(event)` with each activity event, and `listener(null)` each time the feed
     * (re)connects; answers the function that stops it.
     */
    onActivity(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** Hands an activity event to every listener. */
    dispatch(event) {
      if (event.type === "tool.answered" && event.answeredByName) {
        names.set(event.answeredBy, event.answeredByName);
      }
      for (const listener of listeners) listener(event);
    },
    /** The feed's state: "live", "reconnecting", …; listeners hear of each reconnection. */
    setFeedStatus(status) {
      feedStatus = status;
      for (const element of document.querySelectorAll("[data-feed-status]")) {
        element.textContent = FEED_STATUS[status] ?? status;
      }
      if (status === "live") { for (const listener of listeners) listener(null); }
    },
    feedStatusText: () => FEED_STATUS[feedStatus] ?? feedStatus,
    names,
  };
}

/** Loads the principals' names an admin may list, so views show names rather than ids. */
async function learnNames(context) {
  if (!context.can.admin) return;
  try {
    const page = await call("GET", "v1/principals", { query: { limit: 500 } });
    for (const principal of page.principals) {
      if (principal.name) context.names.set(principal.principalId, principal.name);
    }
  } catch {
    // Ids stand in for names.
  }
}

function parseHash() {
  const hash = location.hash.startsWith("#/") ? location.hash.slice(1) : "/inbox";
  const question = hash.indexOf("?");
  const path = question < 0 ? hash : hash.slice(0, question);
  const query = new URLSearchParams(question < 0 ? "" : hash.slice(question + 1));
  return { parts: path.split("/").filter((part) => part !== "").map(decodeURIComponent), query };
}

function route() {
  if (ctx === null) return;
  // Anchors within the page (`#main`) leave the view as it is.
  if (location.hash !== "" && !location.hash.startsWith("#/")) return;
  view?.stop();
  const { parts, query } = parseHash();
  let next;
  if (parts[0] === "runs" && parts.length === 2) next = runView(ctx, parts[1]);
  else if (parts[0] === "runs") next = runsView(ctx, query);
  else if (parts[0] === "audit" && ctx.can.admin) next = auditView(ctx, query);
  else next = inboxView(ctx);
  view = next;
  viewRoot.replaceChildren(next.element);
  for (const link of nav.querySelectorAll("a")) {
    const current = link.getAttribute("href") === `#/${parts[0] ?? "inbox"}`;
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  next.element.querySelector("h2")?.focus();
}

async function start() {
  let me;
  try {
    me = await call("GET", "v1/runtime");
  } catch (error) {
    signOut();
    if (error.status === 401) return "That bearer token was not accepted.";
    if (error.status === 403) return "This principal cannot read runs (it needs session:read).";
    return `The service could not be reached: ${error.message}`;
  }
  ctx = makeContext(me);
  await learnNames(ctx);
  stopActivity = startActivity(ctx);
  signInView.hidden = true;
  nav.hidden = false;
  who.hidden = false;
  auditLink.hidden = !ctx.can.admin;
  whoName.textContent = ctx.principalLabel(me.principalId, me.name).replace(/, you$/, "");
  whoCapabilities.textContent = me.capabilities.join(", ");
  viewRoot.hidden = false;
  route();
  return null;
}

/** Signs out: forgets the bearer, stops every view and stream, shows the sign-in form. */
function end(message) {
  signOut();
  stopActivity?.();
  stopActivity = null;
  view?.stop();
  view = null;
  ctx = null;
  viewRoot.replaceChildren();
  viewRoot.hidden = true;
  notices.replaceChildren();
  nav.hidden = true;
  who.hidden = true;
  inboxCount.textContent = "";
  signInView.hidden = false;
  signInError.textContent = message ?? "";
  announce(message ?? "Signed out.");
  bearerInput.focus();
}

signInForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = bearerInput.value.trim();
  // The field never keeps the bearer: it lives in the API client's memory from here.
  bearerInput.value = "";
  if (token === "") {
    signInError.textContent = "Enter a bearer token.";
    bearerInput.focus();
    return;
  }
  signInError.textContent = "";
  signIn(token, keepInput.checked);
  const problem = await start();
  if (problem !== null) {
    signInError.textContent = problem;
    bearerInput.focus();
  }
});

signOutButton.addEventListener("click", () => end());
globalThis.addEventListener("hashchange", route);

if (restoreSignIn()) {
  start().then((problem) => {
    if (problem !== null) signInError.textContent = problem;
  });
} else {
  bearerInput.focus();
}
