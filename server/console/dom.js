// Building the page: elements made with the DOM API and text set as text, never parsed as HTML
// (the page's Content Security Policy requires Trusted Types for HTML sinks, so an attempt would
// throw), and the small formatting helpers the views share.

/**
 * Makes an element: `attributes` are set with `setAttribute` (`true` as an empty value, `false`,
 * null and undefined left out; `on<event>` adds a listener), `children` appended as nodes, or as
 * text nodes whatever they hold.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

/** Appends nodes, or text nodes for anything else; arrays are flattened, nullish left out. */
export function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.append(child);
    else parent.append(document.createTextNode(String(child)));
  }
}

let ids = 0;
/** A fresh element id, for `aria-labelledby` and `for`. */
export function freshId(prefix) {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** A tool input as text: a string as it is, anything else as indented JSON. */
export function inputText(value) {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A time for people, in the browser's locale and zone; the ISO text when it cannot be read. */
export function formatTime(iso) {
  const time = Date.parse(iso);
  if (Number.isNaN(time)) return String(iso ?? "");
  return new Date(time).toLocaleString();
}

/** A `<time>` element for an RFC 3339 time. */
export function timeElement(iso) {
  return h("time", { datetime: iso }, formatTime(iso));
}

/** A duration for people: "9 min 05 s", "42 s". */
export function formatDuration(ms) {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  const minutes = Math.floor(seconds / 60);
  const rest = seconds % 60;
  if (minutes === 0) return `${rest} s`;
  if (minutes < 60) return `${minutes} min ${String(rest).padStart(2, "0")} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min`;
}

/** The link to a run's page. */
export function runHref(runId) {
  return `#/runs/${encodeURIComponent(runId)}`;
}
