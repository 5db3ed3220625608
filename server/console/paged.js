// A filtered, paged list as a table: the filter form (whose values live in the location's hash,
// so the back button and a reload keep them), the table read page by page with the API's
// cursors, "Load more", and what to say when nothing matches or the read failed. The runs list
// and the audit log are both one.

import { freshId, h } from "./dom.js";

/**
 * A filtered table view: `{ element, stop() }`.
 *
 * - `title`: the heading; `route`: the hash path (`#/runs`); `query`: the hash's query;
 * - `filters`: `[{ name, label, options? }]`, a select of `options` (`[value, text]`, the first
 *   meaning "any") or a text field, each read from and written to the hash's query;
 * - `columns`: the header cells; `row(item)`: the cells of an item;
 * - `read(values, cursor, signal)`: one page, `{ items, nextCursor }`;
 * - `what`: the words for the items in messages ("runs").
 */
export function pagedTable(ctx, options) {
  const controller = new AbortController();
  const headingId = freshId("list");
  const values = {};
  const fields = options.filters.map((filter) => {
    const id = freshId(filter.name);
    const given = (options.query.get(filter.name) ?? "").trim();
    let control;
    if (filter.options !== undefined) {
      values[filter.name] = filter.options.some(([value]) => value === given) ? given : "";
      control = h(
        "select",
        { id },
        filter.options.map(([value, text]) =>
          h("option", { value, selected: value === values[filter.name] }, text)
        ),
      );
    } else {
      values[filter.name] = given;
      control = h("input", {
        id,
        type: "text",
        value: given,
        autocomplete: "off",
        spellcheck: "false",
        placeholder: filter.placeholder ?? "",
      });
    }
    return { name: filter.name, label: filter.label, id, control };
  });
  const form = h(
    "form",
    { class: "filters", "aria-label": `Filter the ${options.what}` },
    fields.map((field) =>
      h("div", { class: "field" }, h("label", { for: field.id }, field.label), field.control)
    ),
    h("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const field of fields) {
      const value = field.control.value.trim();
      if (value !== "") next.set(field.name, value);
    }
    const hash = `${options.route}${next.size > 0 ? `?${next}` : ""}`;
    if (location.hash === hash) load(true);
    else location.hash = hash;
  });
  const body = h("tbody");
  const table = h(
    "table",
    { "aria-labelledby": headingId },
    h("thead", {}, h("tr", {}, options.columns.map((name) => h("th", { scope: "col" }, name)))),
    body,
  );
  const more = h("button", { type: "button", hidden: true, class: "secondary" }, "Load more");
  const empty = h("p", { class: "empty", hidden: true }, `No ${options.what} match.`);
  const failure = h("p", { class: "error", role: "alert", hidden: true });
  const element = h(
    "section",
    { class: "paged" },
    h("h2", { id: headingId, tabindex: "-1" }, options.title),
    form,
    failure,
    table,
    empty,
    more,
  );
  let cursor = null;

  async function load(first) {
    more.disabled = true;
    try {
      const page = await options.read(values, first ? null : cursor, controller.signal);
      if (first) body.replaceChildren();
      for (const item of page.items) body.append(h("tr", {}, options.row(item)));
      cursor = page.nextCursor;
      more.hidden = cursor === null;
      empty.hidden = body.childElementCount > 0;
      failure.hidden = true;
    } catch (error) {
      if (controller.signal.aborted || ctx.signedOutBy(error)) return;
      failure.textContent = `The ${options.what} could not be read: ${error.message}`;
      failure.hidden = false;
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener("click", () => load(false));
  load(true);
  return { element, stop: () => controller.abort() };
}
