// The audit log, for admins: newest first, filtered by action and by principal, page by page.

import { call, SERVICE } from "./api.js";
import { h, runHref, timeElement } from "./dom.js";
import { pagedTable } from "./paged.js";

/** The audit view: `{ element, stop() }`. */
export function auditView(ctx, query) {
  return pagedTable(ctx, {
    title: "Audit log",
    what: "entries",
    route: "#/audit",
    query,
    filters: [
      {
        name: "action",
        label: "Action",
        options: [["", "Any action"], ...SERVICE.auditActions.map((action) => [action, action])],
      },
      { name: "principalId", label: "Principal", placeholder: "principal id" },
    ],
    columns: ["Time", "Action", "By", "Subject", "Run", "Outcome"],
    row: (entry) => [
      h("td", {}, timeElement(entry.at)),
      h("td", {}, entry.action),
      h("td", {}, ctx.principalLabel(entry.actorId)),
      h("td", {}, entry.subjectId ? ctx.principalLabel(entry.subjectId, entry.subjectName) : ""),
      h("td", {}, entry.runId ? h("a", { href: runHref(entry.runId) }, entry.runId) : ""),
      h("td", {}, entry.outcome),
    ],
    async read(values, cursor, signal) {
      const page = await call("GET", "v1/audit", {
        query: { limit: 50, action: values.action, principalId: values.principalId, cursor },
        signal,
      });
      return { items: page.entries, nextCursor: page.nextCursor };
    },
  });
}
