/**
 * What a notification says: which activity entries are notification events, and the body of a
 * delivery in each format.
 *
 * | activity entry | event |
 * |---|---|
 * | `run.state` to `requires_action` | `run.requires_action` (with the requests waiting, when known) |
 * | `run.state` to `completed`, `failed`, `cancelled` | `run.completed`, `run.failed`, `run.cancelled` |
 * | `tool.answered` | `tool.answered` |
 *
 * `standard` bodies are `{type, timestamp, data}` (the Standard Webhooks payload shape); `slack`
 * bodies are an incoming webhook's `{text}`: one line saying what happened, with a link to the
 * console. Neither holds a tool's input or a message.
 *
 * @module
 */
import type {
  NotificationData,
  NotificationEvent,
  NotificationFormat,
  NotificationPayload,
} from "../../wire/mod.ts";
import type { ActivityRecord } from "../store/types.ts";

/** The event an activity entry is, or null when it is none. */
export function eventOf(entry: ActivityRecord): NotificationEvent | null {
  if (entry.type === "tool.answered") return "tool.answered";
  if (entry.type !== "run.state") return null;
  switch (entry.state) {
    case "requires_action":
      return "run.requires_action";
    case "completed":
      return "run.completed";
    case "failed":
      return "run.failed";
    case "cancelled":
      return "run.cancelled";
    default:
      return null;
  }
}

/**
 * The `standard` payload of an entry: `pending` are the `tool.pending` entries of the same wait
 * (for `run.requires_action`), `run` what the run's record says (agent, title).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { payloadOf } from "./payload.ts";
 * const payload = payloadOf({
 *   seq: 9, at: "2026-01-01T00:00:00.000Z", type: "tool.answered", runId: "sesn_1",
 *   principalId: "p", toolUseId: "sevt_1", kind: "confirmation", result: "deny",
 *   answeredBy: "runtime",
 * }, { pending: [], consoleUrl: "https://runtime.example/console/" });
 * assert.equal(payload?.type, "tool.answered");
 * assert.equal(payload?.data.answeredBy, "runtime");
 * ```
 */
export function payloadOf(
  entry: ActivityRecord,
  context: {
    pending: readonly ActivityRecord[];
    run?: { agentId?: string; title?: string };
    consoleUrl?: string;
  },
): NotificationPayload | null {
  const type = eventOf(entry);
  if (type === null) return null;
  const data: NotificationData = { runId: entry.runId, principalId: entry.principalId };
  if (context.run?.agentId !== undefined) data.agentId = context.run.agentId;
  if (context.run?.title !== undefined) data.title = context.run.title;
  if (entry.type === "run.state") data.state = entry.state;
  if (entry.type === "tool.answered") {
    data.toolUseId = entry.toolUseId;
    data.kind = entry.kind;
    data.result = entry.result;
    data.answeredBy = entry.answeredBy;
    if (entry.answeredByName !== undefined) data.answeredByName = entry.answeredByName;
  }
  if (type === "run.requires_action") {
    data.pending = context.pending.flatMap((request) =>
      request.type === "tool.pending"
        ? [{
          toolUseId: request.toolUseId,
          kind: request.kind,
          name: request.name,
          deniedAt: request.deniedAt,
        }]
        : []
    );
  }
  if (context.consoleUrl !== undefined) data.consoleUrl = context.consoleUrl;
  return { type, timestamp: entry.at, data };
}

/** Slack's incoming webhooks treat `<`, `>` and `&` as markup: escaped. */
function slackEscape(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/**
 * The body of a delivery of `payload` in `format`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bodyOf } from "./payload.ts";
 * const payload = {
 *   type: "run.requires_action" as const,
 *   timestamp: "2026-01-01T00:00:00.000Z",
 *   data: {
 *     runId: "sesn_1", principalId: "p", title: "deploy <prod>",
 *     pending: [{ toolUseId: "t", kind: "confirmation" as const, name: "bash", deniedAt: "x" }],
 *     consoleUrl: "https://runtime.example/console/",
 *   },
 * };
 * const slack = JSON.parse(bodyOf(payload, "slack"));
 * assert.match(slack.text, /deploy &lt;prod&gt;/);
 * assert.match(slack.text, /<https:\/\/runtime\.example\/console\/\|/);
 * assert.deepEqual(JSON.parse(bodyOf(payload, "standard")), payload);
 * ```
 */
export function bodyOf(payload: NotificationPayload, format: NotificationFormat): string {
  if (format === "standard") return JSON.stringify(payload);
  const data = payload.data;
  const run = data.title === undefined
    ? `Run ${data.runId}`
    : `Run "${slackEscape(data.title)}" (${data.runId})`;
  let line: string;
  switch (payload.type) {
    case "run.requires_action": {
      const names = (data.pending ?? []).map((request) => slackEscape(request.name));
      line = names.length === 0
        ? `${run} waits for an answer`
        : `${run} waits for an answer: ${names.join(", ")}`;
      break;
    }
    case "run.completed":
      line = `${run} completed`;
      break;
    case "run.failed":
      line = `${run} failed`;
      break;
    case "run.cancelled":
      line = `${run} was cancelled`;
      break;
    case "tool.answered":
      line = `${run}: ${data.kind === "confirmation" ? "tool call" : "custom tool"} ${
        data.result === "allow" || data.result === "ok" ? "answered" : "refused"
      } (${data.result}) by ${slackEscape(data.answeredByName ?? data.answeredBy ?? "someone")}`;
      break;
  }
  const link = data.consoleUrl === undefined ? "" : ` <${data.consoleUrl}|Open the console>`;
  return JSON.stringify({ text: `${line}.${link}` });
}
