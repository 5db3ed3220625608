/**
 * An in-memory managed-agents session for driver tests: a scripted agent, an event log, and a
 * client (`openEventStream`, `listEvents`, `confirmTool`, `respondCustomTool`) that injects faults
 * at the byte level. Streams are real `ReadableStream`s of SSE bytes, cut at random offsets
 * (inside frames and inside UTF-8 characters), chunked at random sizes and with duplicated
 * frames, so the driver reads them through the project's one SSE reader.
 *
 * The agent's events get ids from their script position (`sevt_s<step>_<n>`), so two runs of one
 * script yield the same ids whatever the faults; answers get `sevt_u<n>` ids.
 *
 * @module
 */
import type { ManagedAgentDriverClient } from "../../client/managed_agents/driver.ts";
import type {
  ConfirmToolParams,
  ListSessionEventsParams,
  ManagedAgentEvent,
  RespondCustomToolParams,
} from "../../client/managed_agents/types.ts";

/** A seeded pseudo-random generator (mulberry32): same seed, same sequence. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One step of the agent's script. */
export type ScriptStep =
  | { kind: "message"; text: string }
  | { kind: "confirm"; name: string; input: unknown; threadId?: string }
  | { kind: "allowedTool"; name: string }
  | { kind: "custom"; name: string; input: unknown }
  | { kind: "thread"; threadId: string; agentName: string }
  | { kind: "outcome"; outcomeId: string; result: string }
  | { kind: "sessionError" }
  | { kind: "noise" };

/** How the script ends. */
export type ScriptEnd = "end_turn" | "terminated";

/** A random script mixing every kind of step; request steps sometimes come in batches. */
export function randomScript(random: () => number, length: number): ScriptStep[] {
  const steps: ScriptStep[] = [];
  const texts = ["Hello", "héllo wörld ✓", "emoji 🎉 split", "line\nbreak", "日本語のテキスト"];
  const confirmNames = ["read_file", "dangerous_rm", "throwing_check", "write_file"];
  const customNames = ["lookup", "throwing_tool", "bad_tool", "compute"];
  for (let i = 0; i < length; i++) {
    const pick = random();
    if (pick < 0.2) {
      steps.push({ kind: "message", text: texts[Math.floor(random() * texts.length)] });
    } else if (pick < 0.38) {
      const step: ScriptStep = {
        kind: "confirm",
        name: confirmNames[Math.floor(random() * confirmNames.length)],
        input: { path: `/tmp/${i}`, note: "ünïcode" },
      };
      if (random() < 0.3) step.threadId = `sthr_${i}`;
      steps.push(step);
    } else if (pick < 0.5) {
      steps.push({
        kind: "custom",
        name: customNames[Math.floor(random() * customNames.length)],
        input: { n: i },
      });
    } else if (pick < 0.6) {
      steps.push({ kind: "allowedTool", name: "glob" });
    } else if (pick < 0.7) {
      steps.push({ kind: "thread", threadId: `sthr_t${i}`, agentName: "researcher" });
    } else if (pick < 0.8) {
      const results = ["satisfied", "needs_revision", "failed"];
      steps.push({
        kind: "outcome",
        outcomeId: `outc_${i}`,
        result: results[Math.floor(random() * results.length)],
      });
    } else if (pick < 0.87) {
      steps.push({ kind: "sessionError" });
    } else {
      steps.push({ kind: "noise" });
    }
  }
  return steps;
}

/** Fault probabilities (each 0 to 1) and shapes. */
export interface Faults {
  /** `openEventStream` rejects. */
  openFail: number;
  /** `listEvents` rejects. */
  listFail: number;
  /** A stream is cut somewhere in its first `cutMaxBytes` bytes. */
  cut: number;
  /** Upper bound of the cut offset. */
  cutMaxBytes: number;
  /** A cut ends the body cleanly instead of with an error. */
  cutAsEof: number;
  /** A frame is written twice. */
  duplicate: number;
  /** At most this many already-sent events are replayed when a stream opens. */
  overlap: number;
  /** An answer fails before the provider records it. */
  sendFailBefore: number;
  /** An answer is recorded but its response is lost. */
  sendFailAfter: number;
  /** Largest chunk of bytes a stream delivers at once. */
  maxChunk: number;
}

/** No faults at all. */
export const NO_FAULTS: Faults = {
  openFail: 0,
  listFail: 0,
  cut: 0,
  cutMaxBytes: 0,
  cutAsEof: 0,
  duplicate: 0,
  overlap: 0,
  sendFailBefore: 0,
  sendFailAfter: 0,
  maxChunk: 1 << 16,
};

/** A transport failure (retryable). */
export class TransportError extends Error {
  /** Whether a retry could help. */
  readonly retryable = true;
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "TransportError";
  }
}

/** A provider refusal a retry cannot fix. */
export class RefusedError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** Whether a retry could help. */
  readonly retryable = false;
  /** Creates the error. */
  constructor(status: number, message: string) {
    super(message);
    this.name = "RefusedError";
    this.status = status;
  }
}

const encoder = new TextEncoder();
const BASE_TIME = Date.UTC(2026, 4, 1);

/** The session, the agent running it, and a faulty client onto it. */
export class ScriptedSession implements ManagedAgentDriverClient {
  /** Every event, in order. */
  readonly log: ManagedAgentEvent[] = [];
  /** Recorded answers by tool-use id. */
  readonly answers = new Map<string, (ConfirmToolParams | RespondCustomToolParams)[]>();
  /** Answers sent for a tool use that was already answered. */
  doubleAnswers = 0;
  /** Streams opened, and streams still open. */
  streamsOpened = 0;
  /** Streams whose body is not finished or cancelled yet. */
  openStreams = 0;
  /** Calls by operation. */
  readonly calls = { open: 0, list: 0, send: 0 };

  readonly #steps: readonly ScriptStep[];
  readonly #end: ScriptEnd;
  readonly #random: () => number;
  readonly #faults: Faults;
  #cursor = 0;
  #clock = 0;
  #answerCount = 0;
  readonly #outstanding = new Set<string>();
  readonly #waiters = new Set<() => void>();

  constructor(
    steps: readonly ScriptStep[],
    options: { end?: ScriptEnd; faults?: Faults; seed?: number; prefix?: ManagedAgentEvent[] } = {},
  ) {
    this.#steps = steps;
    this.#end = options.end ?? "end_turn";
    this.#faults = options.faults ?? NO_FAULTS;
    this.#random = seededRandom(options.seed ?? 1);
    for (const event of options.prefix ?? []) this.#emit(event);
    this.#emit({ type: "user.message", id: "sevt_start", content: [{ type: "text", text: "go" }] });
    this.#emit({ type: "session.status_running", id: "sevt_run0" });
    this.#advance();
  }

  /** Whether the script has ended. */
  get finished(): boolean {
    const last = this.log.at(-1)?.type;
    return last === "session.status_terminated" ||
      (last === "session.status_idle" &&
        (this.log.at(-1)?.stop_reason as { type?: string })?.type !== "requires_action");
  }

  #chance(p: number): boolean {
    return p > 0 && this.#random() < p;
  }

  #int(maxExclusive: number): number {
    return Math.floor(this.#random() * maxExclusive);
  }

  #emit(event: ManagedAgentEvent): void {
    // Sometimes two events share a millisecond, as on a real provider.
    if (this.log.length === 0 || this.#random() < 0.7) this.#clock++;
    this.log.push({ ...event, processed_at: new Date(BASE_TIME + this.#clock).toISOString() });
    for (const wake of [...this.#waiters]) wake();
  }

  /** Emits script steps until a batch of requests blocks or the script ends. */
  #advance(): void {
    while (this.#cursor < this.#steps.length) {
      const index = this.#cursor++;
      const step = this.#steps[index];
      const id = (n: number): string => `sevt_s${index}_${n}`;
      switch (step.kind) {
        case "message":
          this.#emit({
            type: "agent.message",
            id: id(0),
            content: [{ type: "text", text: step.text }],
          });
          break;
        case "confirm":
          this.#emit({
            type: "agent.tool_use",
            id: id(0),
            name: step.name,
            input: step.input,
            evaluated_permission: "ask",
            ...(step.threadId ? { session_thread_id: step.threadId } : {}),
          });
          this.#outstanding.add(id(0));
          break;
        case "custom":
          this.#emit({
            type: "agent.custom_tool_use",
            id: id(0),
            name: step.name,
            input: step.input,
          });
          this.#outstanding.add(id(0));
          break;
        case "allowedTool":
          this.#emit({
            type: "agent.tool_use",
            id: id(0),
            name: step.name,
            input: {},
            evaluated_permission: "allow",
          });
          this.#emit({ type: "agent.tool_result", id: id(1), tool_use_id: id(0), is_error: false });
          break;
        case "thread":
          this.#emit({
            type: "session.thread_created",
            id: id(0),
            session_thread_id: step.threadId,
            agent_name: step.agentName,
          });
          this.#emit({
            type: "agent.thread_message_sent",
            id: id(1),
            to_session_thread_id: step.threadId,
            to_agent_name: step.agentName,
            content: [{ type: "text", text: "please help" }],
          });
          this.#emit({
            type: "session.thread_status_idle",
            id: id(2),
            session_thread_id: step.threadId,
            agent_name: step.agentName,
            stop_reason: { type: "end_turn" },
          });
          break;
        case "outcome":
          this.#emit({
            type: "span.outcome_evaluation_start",
            id: id(0),
            outcome_id: step.outcomeId,
            iteration: 0,
          });
          this.#emit({
            type: "span.outcome_evaluation_ongoing",
            id: id(1),
            outcome_id: step.outcomeId,
            iteration: 0,
          });
          this.#emit({
            type: "span.outcome_evaluation_end",
            id: id(2),
            outcome_id: step.outcomeId,
            iteration: 0,
            result: step.result,
            explanation: "graded",
          });
          break;
        case "sessionError":
          this.#emit({
            type: "session.error",
            id: id(0),
            error: {
              type: "model_overloaded_error",
              message: "overloaded",
              retry_status: { type: "retrying" },
            },
          });
          break;
        case "noise":
          this.#emit({ type: "span.model_request_start", id: id(0) });
          this.#emit({ type: "agent.thinking", id: id(1) });
          break;
      }
      const next = this.#steps[this.#cursor];
      const nextIsRequest = next?.kind === "confirm" || next?.kind === "custom";
      if (this.#outstanding.size > 0 && !nextIsRequest) {
        this.#emit({
          type: "session.status_idle",
          id: id(9),
          stop_reason: { type: "requires_action", event_ids: [...this.#outstanding] },
        });
        return;
      }
    }
    if (this.#end === "terminated") {
      this.#emit({ type: "session.status_terminated", id: "sevt_end" });
    } else {
      this.#emit({
        type: "session.status_idle",
        id: "sevt_end",
        stop_reason: { type: "end_turn" },
      });
    }
  }

  /** The SSE frame of an event. */
  #frame(event: ManagedAgentEvent, crlf: boolean): Uint8Array {
    const eol = crlf ? "\r\n" : "\n";
    return encoder.encode(`event: ${event.type}${eol}data: ${JSON.stringify(event)}${eol}${eol}`);
  }

  openEventStream(_sessionId: string, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    this.calls.open++;
    if (this.#chance(this.#faults.openFail)) {
      return Promise.reject(new TransportError("connection refused"));
    }
    this.streamsOpened++;
    this.openStreams++;
    const faults = this.#faults;
    let position = Math.max(0, this.log.length - this.#int(faults.overlap + 1));
    const cutAt = this.#chance(faults.cut) ? this.#int(faults.cutMaxBytes + 1) : Infinity;
    const cutAsEof = this.#chance(faults.cutAsEof);
    const crlf = this.#chance(0.2);
    let sent = 0;
    let pending: Uint8Array = new Uint8Array(0);
    let done = false;
    const finish = (): void => {
      if (!done) {
        done = true;
        this.openStreams--;
      }
    };
    let wake: (() => void) | undefined;
    const stop = (): void => wake?.();
    signal?.addEventListener("abort", stop, { once: true });
    return Promise.resolve(
      new ReadableStream<Uint8Array>({
        pull: async (controller) => {
          while (pending.length === 0) {
            if (done || signal?.aborted) return;
            if (position < this.log.length) {
              const frame = this.#frame(this.log[position++], crlf);
              if (this.#chance(faults.duplicate)) {
                pending = new Uint8Array(frame.length * 2);
                pending.set(frame);
                pending.set(frame, frame.length);
              } else {
                pending = frame;
              }
              break;
            }
            await new Promise<void>((resolve) => {
              wake = resolve;
              this.#waiters.add(resolve);
            });
            if (wake) this.#waiters.delete(wake);
            wake = undefined;
          }
          if (done || signal?.aborted) return;
          const size = Math.min(pending.length, 1 + this.#int(faults.maxChunk));
          if (sent + size >= cutAt) {
            const part = pending.subarray(0, cutAt - sent);
            if (part.length > 0) controller.enqueue(part.slice());
            signal?.removeEventListener("abort", stop);
            finish();
            if (cutAsEof) controller.close();
            else controller.error(new TransportError("stream cut"));
            return;
          }
          controller.enqueue(pending.slice(0, size));
          pending = pending.subarray(size);
          sent += size;
        },
        cancel: () => {
          signal?.removeEventListener("abort", stop);
          finish();
          stop();
        },
      }, { highWaterMark: 0 }),
    );
  }

  listEvents(
    _sessionId: string,
    params?: ListSessionEventsParams,
  ): Promise<readonly ManagedAgentEvent[]> {
    this.calls.list++;
    if (this.#chance(this.#faults.listFail)) {
      return Promise.reject(new TransportError("list failed"));
    }
    const gte = params?.createdAt?.gte;
    const events = gte === undefined
      ? this.log
      : this.log.filter((event) => (event.processed_at as string) >= gte);
    return Promise.resolve(structuredClone(events));
  }

  confirmTool(_sessionId: string, params: ConfirmToolParams): Promise<unknown> {
    return this.#answer(params.toolUseId, params, {
      type: "user.tool_confirmation",
      tool_use_id: params.toolUseId,
      result: params.result,
      ...(params.denyMessage === undefined ? {} : { deny_message: params.denyMessage }),
    });
  }

  respondCustomTool(_sessionId: string, params: RespondCustomToolParams): Promise<unknown> {
    return this.#answer(params.toolUseId, params, {
      type: "user.custom_tool_result",
      custom_tool_use_id: params.toolUseId,
      content: params.content,
      ...(params.isError === undefined ? {} : { is_error: params.isError }),
    });
  }

  async #answer(
    toolUseId: string,
    params: ConfirmToolParams | RespondCustomToolParams,
    event: ManagedAgentEvent,
  ): Promise<unknown> {
    this.calls.send++;
    await Promise.resolve();
    if (this.#chance(this.#faults.sendFailBefore)) throw new TransportError("send failed");
    if (!this.#outstanding.has(toolUseId)) {
      if (this.answers.has(toolUseId)) this.doubleAnswers++;
      throw new RefusedError(400, `Tool use ${toolUseId} is not awaiting an answer`);
    }
    this.#outstanding.delete(toolUseId);
    this.answers.set(toolUseId, [...(this.answers.get(toolUseId) ?? []), structuredClone(params)]);
    const recorded = { ...event, id: `sevt_u${++this.#answerCount}` };
    this.#emit(recorded);
    if (this.#outstanding.size === 0) {
      this.#emit({ type: "session.status_running", id: `sevt_r${this.#cursor}` });
      this.#advance();
    }
    if (this.#chance(this.#faults.sendFailAfter)) throw new TransportError("response lost");
    return { data: [recorded] };
  }
}
