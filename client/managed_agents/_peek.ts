/**
 * A sound shortcut for the stream hot path: most frames of a session stream (status running,
 * thinking, spans, echoes) always map to nothing, and their JSON need not be parsed to know it.
 * {@linkcode skippableFrameType} reads the type straight from the data text, but only when that
 * is provably the type `JSON.parse` would give: the text starts with `{"type":"`, holds no
 * backslash at all (so no escaped key or value can hide a second `type`), and the only `"type"`
 * in it is the first key. Anything else falls back to a full parse.
 *
 * @module
 */

/**
 * Whether `mapManagedAgentEventObject` can map an event of this wire type to a run event. When
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
  const name = type.startsWith("session.") ? type.slice(8) : type.includes(".") ? "" : type;
  return name === "status_idle" || name === "status_terminated" || name === "deleted";
}

const PREFIX = '{"type":"';

/**
 * The type of a frame whose data certainly maps to nothing and carries nothing the stream loop
 * keeps (usage and session errors are parsed), or undefined when the frame must be parsed.
 */
export function skippableFrameType(data: string): string | undefined {
  if (!data.startsWith(PREFIX)) return undefined;
  const end = data.indexOf('"', PREFIX.length);
  if (end < 0) return undefined;
  const type = data.slice(PREFIX.length, end);
  if (
    isMappedEventType(type) || type === "session.usage" || type === "usage" ||
    type === "session.error"
  ) return undefined;
  if (data.indexOf("\\") !== -1 || data.indexOf('"type"', end) !== -1) return undefined;
  return type;
}
