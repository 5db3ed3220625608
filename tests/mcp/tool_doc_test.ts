/**
 * `docs/mcp.md` cannot drift from the tool catalogue: its tool table names exactly the tools the
 * server serves, each with its HTTP twin.
 */
import assert from "node:assert/strict";
import { TOOL_CATALOG } from "../../server/mcp/tool_catalog.ts";

const DOC = await Deno.readTextFile(new URL("../../docs/mcp.md", import.meta.url));

/** The rows of the first table of the page whose header starts with `| tool`. */
function toolRows(): { name: string; twin: string }[] {
  const lines = DOC.split("\n");
  const header = lines.findIndex((line) => /^\|\s*tool\s*\|/.test(line));
  assert.ok(header >= 0, "docs/mcp.md has no tool table");
  const rows: { name: string; twin: string }[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith("|")) break;
    const cells = line.split("|").map((cell) => cell.trim());
    rows.push({ name: cells[1].replaceAll("`", ""), twin: cells[4] });
  }
  return rows;
}

Deno.test("docs/mcp.md lists every tool of the catalogue with its HTTP twin, and no other", () => {
  const rows = toolRows();
  const documented = rows.map((row) => row.name);
  assert.equal(new Set(documented).size, documented.length, "a tool documented twice");
  const served = TOOL_CATALOG.map((tool) => tool.name);
  assert.deepEqual(
    served.filter((name) => !documented.includes(name)),
    [],
    "tools missing from docs/mcp.md",
  );
  assert.deepEqual(
    documented.filter((name) => !served.includes(name)),
    [],
    "tools in docs/mcp.md the catalogue does not have",
  );
  for (const tool of TOOL_CATALOG) {
    const twin = rows.find((row) => row.name === tool.name)!.twin;
    const path = tool.path.replace(/:([A-Za-z]+)/g, "{$1}");
    assert.ok(
      twin.includes(`\`${tool.method} ${path}\``) ||
        // The revoke row names the principal's id as the route table's `{id}`.
        twin.includes(`\`${tool.method} ${path.replace("{principalId}", "{id}")}\``),
      `${tool.name}: its twin is ${tool.method} ${path}, the table says ${twin}`,
    );
  }
});
