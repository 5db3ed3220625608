/**
 * The speed trick of the session stream, confined to one function: {@linkcode judgeFrame}
 * reads an event's type straight from the frame's data text, without `JSON.parse`, but only when
 * that is provably the type a parse would give. Most frames of a session stream (status running,
 * thinking, spans) map to no run event, so the run loop passes them over unparsed: in
 * `bench/session_stream_bench.ts` that is 4 frames in 10 whose `JSON.parse` and event object are
 * never paid for (the whole-text check costs about 19 ms per 100,000 frames there).
 *
 * @module
 */

/**
 * Whether `mapManagedAgentSessionEvent` can map an event of this wire type to a run event. When
 * false, the event maps to null whatever its other fields are.
 */
export function isMappedEventType(type: string): boolean {
  switch (type) {
    case "agent.message":
    case "agent.tool_use":
    case "agent.mcp_tool_use":
    case "agent.custom_tool_use":
    case "agent.tool_result":
    case "agent.mcp_tool_result":
    case "event_delta":
    case "error":
      return true;
  }
  // Lifecycle types, dotted or namespace-stripped, compared whole (no slice per frame).
  return type === "session.status_idle" || type === "status_idle" ||
    type === "session.status_terminated" || type === "status_terminated" ||
    type === "session.deleted" || type === "deleted";
}

/**
 * Whether an event of this wire type can be passed over by a run: it maps to nothing and carries
 * nothing the run keeps (usage, the last session error, a preview's start).
 */
export function isSkippableEventType(type: string): boolean {
  return !isMappedEventType(type) && type !== "session.usage" && type !== "usage" &&
    type !== "session.error" && type !== "event_start";
}

const PREFIX = '{"type":"';

/**
 * What `judge` says of a frame's type, read straight from its data text, when that is certainly
 * the type a parse would give: the text starts with `{"type":"`, holds no backslash at all (so no
 * escaped key or value can hide a second `type`), and the only `"type"` in it is the first key.
 * False otherwise (the caller then parses). The whole-text scans run only for types `judge` does
 * not answer false, so frames that will be parsed anyway pay one short prefix check.
 */
export function judgeFrame<Verdict>(
  data: string,
  judge: (type: string) => Verdict | false,
): Verdict | false {
  if (!data.startsWith(PREFIX)) return false;
  const end = data.indexOf('"', PREFIX.length);
  if (end < 0) return false;
  const verdict = judge(data.slice(PREFIX.length, end));
  if (verdict === false) return false;
  return data.indexOf("\\") === -1 && data.indexOf('"type"', end) === -1 ? verdict : false;
}

/** The type written at the start of a frame's data that {@linkcode judgeFrame} answered for. */
export function judgedType(data: string): string {
  return data.slice(PREFIX.length, data.indexOf('"', PREFIX.length));
}

/**
 * The type of a frame whose data certainly maps to nothing and carries nothing the run keeps, or
 * undefined when the frame must be parsed.
 */
export function skippableFrameType(data: string): string | undefined {
  return judgeFrame(data, isSkippableEventType) ? judgedType(data) : undefined;
}
