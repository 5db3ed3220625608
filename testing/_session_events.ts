/**
 * Session events in the provider simulator: the events a client sends (messages, interrupts, tool
 * answers, outcomes), the scripted turns they start, the event history and its live streams.
 *
 * A `user.message` starts a turn with the agent's turn script (its own, else the state's
 * `script`): `session.status_running`, the script's steps, then `session.status_idle` with
 * `requires_action` while tool calls wait for answers, else `end_turn`. Answers
 * (`user.tool_confirmation`, `user.custom_tool_result`) resume the turn with the continuation
 * script once every pending call has one.
 *
 * @module
 */
import { type Json, jsonResponse, sseFrame } from "./http.ts";
import type { ManagedAgentsState, SimulatedSession } from "./managed_agents.ts";
import {
  isPause,
  isUsageReport,
  listCostOf,
  type ListPrices,
  type TokenUsage,
  type TurnScript,
  type TurnStep,
} from "./turns.ts";
import { bad, newId, notFound, now, obj, paginate, type Section, str, textOf } from "./_support.ts";

/** What the other sections use of the session events. */
export interface SessionEvents {
  /** The session, else a 404. */
  getSession(id: string): SimulatedSession;
  /** Emits an event on a session (history, status, pending calls, streams). */
  emit(session: SimulatedSession, partial: Json): Json;
  /** Records the events a client sent and runs what they start; returns them as recorded. */
  receiveEvents(session: SimulatedSession, events: unknown[]): Json[];
  /** Stops the session's scripted turn (its pending steps). */
  stopTurn(session: SimulatedSession): void;
  /** Writes an event to the session's open streams only. */
  broadcast(session: SimulatedSession, event: Json): void;
  /** Opens an event stream of the session (of one thread, with message previews on request). */
  openStream(session: SimulatedSession, threadId?: string, url?: URL): Response;
  /** Answers an event list of the session (`types[]`, `order`, pagination). */
  listEvents(events: Json[], url: URL): Response;
}

/**
 * The prices of the model a session (or an agent snapshot) runs: the state's `modelPrices` for
 * that model when it names it (null: not priced), else `listPrices`.
 */
export function pricesOfAgent(state: ManagedAgentsState, agent: unknown): ListPrices | null {
  const model = obj(agent)?.model;
  const id = typeof model === "string" ? model : str(obj(model)?.id);
  if (id !== undefined && state.modelPrices.has(id)) return state.modelPrices.get(id)!;
  return state.listPrices;
}

/** The list cost a session has accrued, in minor units (0 before any priced usage). */
export function costOfSession(session: SimulatedSession): bigint {
  const cost = obj(obj(session.record.usage)?.list_cost)?.amount;
  return typeof cost === "string" ? BigInt(cost) : 0n;
}

/** Whether a session with a budget has reached it. */
export function atCeiling(session: SimulatedSession): boolean {
  const max = obj(obj(session.record.budget)?.max_list_cost)?.amount;
  return typeof max === "string" && costOfSession(session) >= BigInt(max);
}

const SENDABLE = new Set([
  "user.message",
  "user.interrupt",
  "user.tool_confirmation",
  "user.custom_tool_result",
  "user.tool_result",
  "user.define_outcome",
  "system.message",
]);

/** Installs the event routes of sessions and returns what the other sections use. */
export function installSessionEventRoutes({ simulator, state, route }: Section): SessionEvents {
  function getSession(id: string): SimulatedSession {
    const session = state.sessions.get(id);
    if (!session) throw notFound(`Session ${id}`);
    return session;
  }
  function broadcast(session: SimulatedSession, event: Json): void {
    const threadId = str(event.session_thread_id);
    const primary = session.threads[0].id;
    for (const { subscriber, threadId: filter, deltas } of session.subscribers) {
      if (filter !== undefined && filter !== (threadId ?? primary)) continue;
      if (deltas && event.type === "agent.message") subscriber.write(previewFrames(event));
      subscriber.write(sseFrame(event));
    }
  }
  function emit(session: SimulatedSession, partial: Json): Json {
    if (simulator.injectUnknownEvents) {
      const unknown = { type: "unknown.future_event", id: newId("sevt"), processed_at: now() };
      session.events.push(unknown);
      broadcast(session, unknown);
    }
    // `type` first, as the provider writes it (the clients read a frame's type from its text).
    const event: Json = { type: partial.type, id: newId("sevt"), processed_at: now(), ...partial };
    session.events.push(event);
    const type = event.type as string;
    const record = session.record;
    if (type === "session.status_running") record.status = "running";
    else if (type === "session.status_idle") record.status = "idle";
    else if (type === "session.status_rescheduled") record.status = "rescheduling";
    else if (type === "session.status_terminated") record.status = "terminated";
    else if (type === "session.thread_created") {
      session.threads.push({
        id: event.session_thread_id ?? newId("sthr"),
        type: "session_thread",
        session_id: record.id,
        parent_thread_id: session.threads[0].id,
        status: "running",
        agent: { type: "agent", name: event.agent_name ?? null },
        created_at: event.processed_at,
        updated_at: event.processed_at,
        archived_at: null,
      });
    } else if (type.startsWith("session.thread_status_")) {
      const thread = session.threads.find((t) => t.id === event.session_thread_id);
      if (thread) {
        thread.status = type.slice(22) === "rescheduled" ? "rescheduling" : type.slice(22);
      }
    } else if (type === "session.usage") {
      record.usage = event.usage;
    }
    if (type.startsWith("session.status_")) session.threads[0].status = record.status;
    if (
      (type === "agent.tool_use" || type === "agent.mcp_tool_use") &&
      event.evaluated_permission === "ask"
    ) session.pending.add(event.id as string);
    if (type === "agent.custom_tool_use") session.pending.add(event.id as string);
    state.onEmit?.(record.id as string, event);
    broadcast(session, event);
    return event;
  }
  /**
   * One model request of a usage report: its span, then `session.usage` with the session's
   * totals with the step added (and their list cost, when the model is priced).
   */
  function modelRequest(session: SimulatedSession, added: TokenUsage): void {
    const before = obj(session.record.usage) ?? {};
    const count = (key: string): number => typeof before[key] === "number" ? before[key] : 0;
    const totals = {
      inputTokens: count("input_tokens") + added.inputTokens,
      outputTokens: count("output_tokens") + added.outputTokens,
      cacheReadInputTokens: count("cache_read_input_tokens") + (added.cacheReadInputTokens ?? 0),
    };
    const prices = pricesOfAgent(state, session.record.agent);
    emit(session, { type: "span.model_request_start" });
    emit(session, {
      type: "span.model_request_end",
      is_error: false,
      model_usage: {
        input_tokens: added.inputTokens,
        output_tokens: added.outputTokens,
        cache_read_input_tokens: added.cacheReadInputTokens ?? 0,
        cache_creation_input_tokens: 0,
      },
    });
    emit(session, {
      type: "session.usage",
      usage: {
        input_tokens: totals.inputTokens,
        output_tokens: totals.outputTokens,
        cache_read_input_tokens: totals.cacheReadInputTokens,
        ...(prices === null ? {} : { list_cost: listCostOf(totals, prices) }),
      },
      budget: session.record.budget ?? null,
    });
  }
  /**
   * Stops the turn at once, dropping its pending steps and tool calls: the session goes idle with
   * `reason` (an interrupt's `end_turn`, or `budget_reached` when it can make no more requests).
   */
  function haltTurn(session: SimulatedSession, reason: "end_turn" | "budget_reached"): void {
    stopTurn(session);
    session.pending.clear();
    emit(session, {
      type: "session.status_idle",
      stop_reason: { type: reason },
      stop_details: null,
    });
  }
  function budgetReached(session: SimulatedSession): void {
    haltTurn(session, "budget_reached");
  }
  function stopTurn(session: SimulatedSession): void {
    for (const timer of session.timers) clearTimeout(timer);
    session.timers.clear();
  }
  function endTurn(session: SimulatedSession): void {
    const last = session.events.at(-1)?.type as string | undefined;
    if (last === "session.status_idle" || last === "session.status_terminated") return;
    emit(session, {
      type: "session.status_idle",
      stop_reason: session.pending.size > 0
        ? { type: "requires_action", event_ids: [...session.pending] }
        : { type: "end_turn" },
      stop_details: null,
    });
  }
  function runSteps(session: SimulatedSession, steps: TurnStep[], from = 0): void {
    for (let i = from; i < steps.length; i++) {
      const step = steps[i];
      if (isPause(step)) {
        const timer = setTimeout(() => {
          session.timers.delete(timer);
          if (state.sessions.get(session.record.id as string) === session) {
            runSteps(session, steps, i + 1);
          }
        }, step.delayMs);
        session.timers.add(timer);
        return;
      }
      if (!isUsageReport(step)) {
        emit(session, step as Json);
        continue;
      }
      if (atCeiling(session)) return budgetReached(session);
      modelRequest(session, step.addUsage);
      if (atCeiling(session)) return budgetReached(session);
    }
    endTurn(session);
  }
  function startTurn(session: SimulatedSession, steps: TurnStep[]): void {
    emit(session, { type: "session.status_running" });
    if (atCeiling(session)) return budgetReached(session);
    runSteps(session, steps);
  }
  function scriptOf(session: SimulatedSession, which: "turn" | "continuation"): TurnScript {
    const agentId = str(obj(session.record.agent)?.id);
    const own = agentId === undefined ? undefined : state.agentScripts.get(agentId);
    if (which === "turn") return own?.turn ?? state.script;
    return own?.continuation ?? state.continuation;
  }
  function afterAnswer(session: SimulatedSession): void {
    if (session.pending.size > 0) {
      emit(session, {
        type: "session.status_idle",
        stop_reason: { type: "requires_action", event_ids: [...session.pending] },
        stop_details: null,
      });
      return;
    }
    const script = scriptOf(session, "continuation");
    startTurn(session, script({ session: session.record, text: "", events: session.events }));
  }
  function answerId(event: Json): unknown {
    return event.type === "user.tool_confirmation"
      ? event.tool_use_id
      : event.type === "user.custom_tool_result"
      ? event.custom_tool_use_id
      : undefined;
  }
  function receiveEvents(session: SimulatedSession, events: unknown[]): Json[] {
    if (session.record.archived_at || session.record.status === "terminated") {
      throw bad("The session no longer accepts events");
    }
    const parsed = events.map((e) => {
      const event = obj(e);
      if (!event || !SENDABLE.has(event.type as string)) {
        throw bad(`events[] has an unsupported type: ${obj(e)?.type}`);
      }
      return event;
    });
    // Validate answers before recording anything.
    const answering = new Set<string>();
    for (const event of parsed) {
      const id = answerId(event);
      if (id === undefined) continue;
      if (typeof id !== "string" || !session.pending.has(id) || answering.has(id)) {
        throw bad(`Tool use ${id} is not awaiting an answer`);
      }
      if (
        event.type === "user.tool_confirmation" && event.result !== "allow" &&
        event.result !== "deny"
      ) {
        throw bad("result must be allow or deny");
      }
      answering.add(id);
    }
    const recorded: Json[] = [];
    for (const event of parsed) {
      const echoed = emit(session, event);
      recorded.push(echoed);
      switch (event.type) {
        case "user.message": {
          const script = scriptOf(session, "turn");
          const text = textOf(event.content);
          startTurn(session, script({ session: session.record, text, events: session.events }));
          break;
        }
        case "user.interrupt":
          haltTurn(session, "end_turn");
          break;
        case "user.tool_confirmation": {
          const toolUseId = event.tool_use_id as string;
          session.pending.delete(toolUseId);
          emit(session, {
            type: "agent.tool_result",
            tool_use_id: toolUseId,
            content: [{ type: "text", text: event.result === "allow" ? "ran" : "denied" }],
            is_error: event.result !== "allow",
          });
          afterAnswer(session);
          break;
        }
        case "user.custom_tool_result":
          session.pending.delete(event.custom_tool_use_id as string);
          afterAnswer(session);
          break;
        case "user.define_outcome":
          defineOutcome(session, event, echoed);
          break;
      }
    }
    return recorded;
  }
  function defineOutcome(session: SimulatedSession, event: Json, echoed: Json): void {
    const outcomeId = newId("outc");
    const maxIterations = typeof event.max_iterations === "number" ? event.max_iterations : 3;
    if (maxIterations < 1 || maxIterations > 20) throw bad("max_iterations must be 1 to 20");
    echoed.outcome_id = outcomeId;
    startTurn(session, [
      { type: "span.outcome_evaluation_start", outcome_id: outcomeId, iteration: 0 },
      { type: "agent.message", content: [{ type: "text", text: "Working on the outcome" }] },
      { type: "span.outcome_evaluation_ongoing", outcome_id: outcomeId, iteration: 0 },
      {
        type: "span.outcome_evaluation_end",
        outcome_id: outcomeId,
        iteration: 0,
        result: state.outcomeResult,
        explanation: `Graded ${state.outcomeResult}`,
      },
    ]);
    (session.record.outcome_evaluations as Json[]).push({
      type: "outcome_evaluation",
      outcome_id: outcomeId,
      description: event.description,
      iteration: 0,
      result: state.outcomeResult,
    });
  }
  route("POST", "/v1/sessions/:id/events", async (c) => {
    const session = getSession(c.params.id);
    const body = await c.body();
    if (!Array.isArray(body.events) || body.events.length === 0) {
      throw bad("events must be a non-empty array");
    }
    return jsonResponse({ data: receiveEvents(session, body.events) });
  });
  function listEvents(events: Json[], url: URL): Response {
    let list = events;
    const types = url.searchParams.getAll("types[]");
    if (types.length > 0) list = list.filter((e) => types.includes(e.type as string));
    if (url.searchParams.get("order") === "desc") list = [...list].reverse();
    return jsonResponse(paginate(list, url));
  }
  route(
    "GET",
    "/v1/sessions/:id/events",
    (c) => listEvents(getSession(c.params.id).events, c.url),
  );
  /**
   * The preview of an `agent.message` for a stream that asked for `event_deltas[]=agent.message`:
   * an `event_start` with the final event's id, then its text as `event_delta` frames of at most
   * `state.deltaChunk` characters (the final buffered event follows).
   */
  function previewFrames(event: Json): string {
    let frames = sseFrame({ type: "event_start", event: { type: event.type, id: event.id } });
    const text = textOf(event.content);
    const size = Math.max(1, state.deltaChunk);
    for (let i = 0; i < text.length; i += size) {
      frames += sseFrame({
        type: "event_delta",
        event_id: event.id,
        delta: { type: "content_delta", content: { type: "text", text: text.slice(i, i + size) } },
      });
    }
    return frames;
  }
  function openStream(session: SimulatedSession, threadId?: string, url?: URL): Response {
    const deltas = url?.searchParams.getAll("event_deltas[]").includes("agent.message") ?? false;
    return simulator.sseResponse((subscriber) => {
      const entry = { subscriber, threadId, deltas };
      session.subscribers.add(entry);
      return () => session.subscribers.delete(entry);
    });
  }
  route(
    "GET",
    "/v1/sessions/:id/events/stream",
    (c) => openStream(getSession(c.params.id), undefined, c.url),
  );

  return { getSession, emit, receiveEvents, stopTurn, broadcast, openStream, listEvents };
}
