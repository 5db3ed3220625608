/**
 * A session's events through the provider's own API, served from the run's native log (the
 * provider's own events, kept by the run's one tail: `server/runs/tail.ts`), and the events a
 * client sends, through the gateway's paths.
 *
 * | operation | capability | what the gateway does |
 * |---|---|---|
 * | list | `session:read` | a page of the native log: `limit` 1 to 1000 (20), `page`, `order` (`asc`, `desc`), `types[]`, `created_at[gt,gte,lt,lte]`; `{data, next_page}` |
 * | stream | `session:read` | the native log as SSE (`id: <seq>`, `event: <type>`, `data: <event>`): after `Last-Event-ID` when given, else from now on; `event_deltas[]` adds live previews |
 * | send | per event | each event in order, through the gateway: `user.message`, `user.define_outcome` as follow-ups and `user.interrupt` as a cancel (`session:write`, own sessions); `user.tool_confirmation` (`session:approve`), `user.custom_tool_result` and `user.tool_result` (`session:write`, own sessions) through the one claim path, exactly once; `{data: [recorded events]}` |
 *
 * A send checks every event's capability before it sends any. It then sends them one by one: when
 * one fails, the ones before it have taken effect, so the refusal carries
 * `x-should-retry: false` (a retry would send them again).
 *
 * Previews: the provider does not keep them, so a stream that asks for `event_deltas[]` opens
 * its own stream of them from the provider (through the gateway's client, on whichever replica
 * serves it) and passes on its `event_start` and `event_delta` frames between the log's
 * events, while it stands at the log's end.
 *
 * @module
 */
import { isObject } from "../../client/guards.ts";
import type { ManagedAgentEvent } from "../../client/mod.ts";
import type { IdempotencyRecord } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import { isAnswerEvent } from "../runs/answers.ts";
import { EVENT_PAGE_READ, MAX_EVENT_PAGE_CHARS } from "../runs/event_page.ts";
import type { NativeEventEntry } from "../store/types.ts";
import type { PreviewSource } from "../runs/events.ts";
import { sseResponse } from "../routes/run_events.ts";
import { nativeErrorResponse } from "../runs/native_error.ts";
import type { Capability } from "../store/types.ts";
import type { NativeSendEventsBody } from "../../wire/mod.ts";
import type { NativeCall, NativeHandler } from "./_chain.ts";
import { type NativeParts, queryOf } from "./_parts.ts";
import { inRanges, invalid, listParams, type TimeRange } from "./_query.ts";

/** Most events of one page. */
export const MAX_NATIVE_PAGE = 1000;
/** Events of a page when `limit` is absent. */
const DEFAULT_NATIVE_PAGE = 20;
/** The preview types a stream passes on. */
const PREVIEW_TYPES: ReadonlySet<unknown> = new Set(["event_start", "event_delta"]);
const ENCODER = new TextEncoder();

/** The capability each sendable event needs. */
const NEEDS: Readonly<Record<string, Capability>> = {
  "user.message": "session:write",
  "user.define_outcome": "session:write",
  "user.interrupt": "session:write",
  "user.tool_confirmation": "session:approve",
  "user.custom_tool_result": "session:write",
  "user.tool_result": "session:write",
};

/** A page cursor: `a<seq>` continues after seq (ascending), `d<seq>` before it (descending). */
const CURSOR = /^([ad])([0-9]{1,15})$/;
const KNOWN_PARAMS: ReadonlySet<string> = new Set(["page", "order", "types[]"]);

interface EventQuery {
  limit: number;
  order: "asc" | "desc";
  from?: number;
  types: Set<string>;
  createdAt: readonly TimeRange[];
}

function eventQuery(query: string): EventQuery {
  const params = new URLSearchParams(query);
  const parsed: EventQuery = {
    ...listParams(params, {
      known: KNOWN_PARAMS,
      what: "events",
      maxLimit: MAX_NATIVE_PAGE,
      defaultLimit: DEFAULT_NATIVE_PAGE,
    }),
    order: "asc",
    types: new Set(params.getAll("types[]")),
  };
  const order = params.get("order");
  if (order !== null && order !== "asc" && order !== "desc") {
    throw invalid("order must be asc or desc");
  }
  if (order === "desc") parsed.order = "desc";
  const page = params.get("page");
  if (page !== null && page !== "") {
    const match = CURSOR.exec(page);
    if (match === null || (match[1] === "a") !== (parsed.order === "asc")) {
      throw invalid("page is not a cursor of this list");
    }
    parsed.from = Number(match[2]);
  }
  return parsed;
}

/** Whether an event's `processed_at` lies in every range (only read when ranges are given). */
function processedIn(json: string, ranges: readonly TimeRange[]): boolean {
  if (ranges.length === 0) return true;
  return inRanges((JSON.parse(json) as { processed_at?: unknown }).processed_at, ranges);
}

/**
 * Live previews of a session from the provider: its `event_start` and `event_delta` frames, each
 * as an SSE frame without an id, from its own stream of the session with `event_deltas[]`,
 * reconnected (0.5 s doubling to 5 s) until the native stream ends.
 */
function previewsOf(
  parts: NativeParts,
  call: NativeCall,
  path: string,
  query: string,
): PreviewSource {
  return (sendFrame, signal) => {
    (async () => {
      // The SSE reader (and its parser package) loads with the first preview stream, not at start.
      const { parseSseJson, readSseBatches } = await import("../../client/sse.ts");
      let backoff = 500;
      while (!signal.aborted) {
        try {
          const client = await parts.gateway.providerClient();
          const body = await client.rawStream({ path, query, ...call.upstream, signal });
          for await (const frames of readSseBatches(body, { signal })) {
            backoff = 500;
            for (const frame of frames) {
              const data = parseSseJson(frame);
              if (!isObject(data) || !PREVIEW_TYPES.has(data.type)) continue;
              sendFrame(ENCODER.encode(`event: ${data.type}\ndata: ${frame.data}\n\n`));
            }
          }
        } catch {
          // The provider's stream broke or refused: try again while the stream is open.
        }
        if (signal.aborted) return;
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, backoff);
          signal.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve(undefined);
          }, { once: true });
        });
        backoff = Math.min(backoff * 2, 5_000);
      }
    })();
  };
}

/**
 * The call of the events after a send's first one: its idempotency key stays begun whatever
 * happens next, since the first event took effect (a retry with the key must not send it again).
 */
function afterFirst(call: NativeCall): NativeCall {
  const key = call.run.idempotency;
  if (key === undefined || key === null) return call;
  const kept: IdempotencyRecord = {
    scope: key.scope,
    token: key.token,
    requestDigest: key.requestDigest,
    expiresAt: key.expiresAt,
    recorded: () => key.recorded(),
    begin: () => key.begin(),
    undone: () => {},
    used: (held) => key.used(held),
  };
  return { ...call, run: { ...call.run, idempotency: kept } };
}

/** The event handlers, by the operation table's access (`operations.ts`). */
export function eventHandlers(parts: NativeParts): {
  listEvents: NativeHandler;
  streamEvents: NativeHandler;
  sendEvents: NativeHandler;
} {
  const { gateway, store, hub, answers } = parts;

  async function send(
    call: NativeCall,
    runId: string,
    event: ManagedAgentEvent,
  ): Promise<ManagedAgentEvent[]> {
    if (isAnswerEvent(event)) return (await answers.send(call.run, runId, event)).recorded;
    if (event.type === "user.interrupt") {
      return (await gateway.interrupt(call.run, runId, event)).recorded;
    }
    return (await gateway.followUp(call.run, runId, [event])).recorded;
  }

  return {
    async listEvents(context, call) {
      gateway.requireEnabled();
      const query = eventQuery(queryOf(context) ?? "");
      const record = await gateway.visibleRun(call.run.principal, context.params.sessionId, "read");
      // At most MAX_EVENT_PAGE_CHARS of events past the first (as `/v1` pages), read 100 at a
      // time: a page cut there ends at the last event it holds, and its cursor goes on from it.
      const data: string[] = [];
      let chars = 0;
      let read = 0;
      let last: NativeEventEntry | undefined;
      let cursor = query.from;
      let cut = false;
      let ended = false;
      while (read < query.limit && !cut && !ended) {
        const want = Math.min(query.limit - read, EVENT_PAGE_READ);
        const entries = await store.events.listNative(record.runId, {
          order: query.order,
          limit: want,
          ...(cursor === undefined
            ? {}
            : query.order === "asc"
            ? { after: cursor }
            : { before: cursor }),
        });
        ended = entries.length < want;
        for (const entry of entries) {
          if (
            (query.types.size === 0 || query.types.has(entry.type)) &&
            processedIn(entry.json, query.createdAt)
          ) {
            if (data.length > 0 && chars + entry.json.length > MAX_EVENT_PAGE_CHARS) {
              cut = true;
              break;
            }
            data.push(entry.json);
            chars += entry.json.length;
          }
          read++;
          last = entry;
        }
        cursor = last?.seq ?? cursor;
      }
      const next = (ended && !cut) || last === undefined
        ? "null"
        : `"${query.order === "asc" ? "a" : "d"}${last.seq}"`;
      return new Response(`{"data":[${data.join(",")}],"next_page":${next}}`, {
        headers: { "content-type": "application/json" },
      });
    },

    async streamEvents(context, call) {
      const runId = context.params.sessionId;
      // A subscriber of a session this replica read lately is let in with no store read.
      await gateway.streamableRun(call.run.principal, runId);
      const lastEventId = context.request.headers.get("last-event-id");
      let after: number | undefined;
      if (lastEventId !== null && lastEventId.trim() !== "") {
        const trimmed = lastEventId.trim();
        if (!/^(0|[1-9][0-9]{0,14})$/.test(trimmed)) {
          throw new InterfaceError(
            "invalidHeader",
            "Last-Event-ID must be an id this stream sent",
            {
              extra: { header: "last-event-id" },
            },
          );
        }
        after = Number(trimmed);
      }
      const params = new URLSearchParams(queryOf(context) ?? "");
      const deltas = params.getAll("event_deltas[]");
      const previews = deltas.length === 0 ? undefined : previewsOf(
        parts,
        call,
        `/v1/sessions/${encodeURIComponent(runId)}/events/stream`,
        deltas.map((type) => `event_deltas%5B%5D=${encodeURIComponent(type)}`).join("&"),
      );
      const body = await hub.nativeStream({
        runId,
        ...(after !== undefined ? { after } : {}),
        authorization: call.credential,
        principalId: call.run.principal.principalId,
        ...(previews !== undefined ? { previews } : {}),
      });
      return sseResponse(body);
    },

    async sendEvents(context, call) {
      gateway.requireEnabled();
      const runId = context.params.sessionId;
      const events = (context.body as NativeSendEventsBody).events as ManagedAgentEvent[];
      const capabilities = call.run.principal.capabilities;
      for (const event of events) {
        const needed = NEEDS[event.type as string];
        if (!capabilities.includes(needed)) {
          throw new InterfaceError(
            "missingCapability",
            `Sending ${event.type} requires ${needed}`,
            { extra: { requiredCapability: needed } },
          );
        }
      }
      const recorded: ManagedAgentEvent[] = [];
      for (let i = 0; i < events.length; i++) {
        try {
          recorded.push(...await send(i === 0 ? call : afterFirst(call), runId, events[i]));
        } catch (error) {
          if (i === 0) throw error;
          // The events before this one took effect: a retry of the whole body would send
          // them again.
          const response = nativeErrorResponse(error, call.requestId, parts.rules.logger, {
            method: context.method,
            path: context.path,
          });
          response.headers.set("x-should-retry", "false");
          return response;
        }
      }
      return Response.json({ data: recorded });
    },
  };
}
