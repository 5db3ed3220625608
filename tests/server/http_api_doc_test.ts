/**
 * `docs/http-api.md` cannot drift from the code: its route table names exactly the routes of the
 * server's route table (every method and path, a server with runs and webhook intake enabled),
 * its code table exactly the codes of the error table (`server/errors.ts`), and it names every
 * capability.
 */
import assert from "node:assert/strict";
import { ERROR_CODES } from "../../server/errors.ts";
import { defaultRouteTable } from "../../server/openapi/table.ts";
import { CAPABILITIES } from "../../wire/mod.ts";

const DOC = await Deno.readTextFile(new URL("../../docs/http-api.md", import.meta.url));

/** The lines of the section under `heading`, up to the next heading of its level or above. */
function section(heading: string): string[] {
  const lines = DOC.split("\n");
  const start = lines.indexOf(heading);
  assert.ok(start >= 0, `docs/http-api.md has no "${heading}"`);
  const level = heading.indexOf(" ");
  const end = lines.findIndex((line, index) =>
    index > start && /^#+ /.test(line) && line.indexOf(" ") <= level
  );
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The first cell of each row of the first table in `lines`. */
function firstCells(lines: string[]): string[] {
  return lines.filter((line) => line.startsWith("| ")).slice(2).map((line) =>
    line.split(" | ")[0].slice(2)
  );
}

/** Every route of a server with every part enabled, as `METHOD /path/{param}`. */
async function routeTable(): Promise<string[]> {
  return (await defaultRouteTable()).map((route) =>
    `${route.method} ${route.path.replace(/:([A-Za-z]+)/g, "{$1}")}`
  );
}

Deno.test("docs/http-api.md lists every route of the route table, and no other", async () => {
  const documented = firstCells(section("## Routes")).flatMap((cell) =>
    [...cell.matchAll(/`([A-Z]+ \/[^`]*)`/g)].map((match) => match[1])
  );
  assert.equal(new Set(documented).size, documented.length, "a route documented twice");
  const routes = await routeTable();
  const missing = routes.filter((route) => !documented.includes(route));
  const unknown = documented.filter((route) => !routes.includes(route));
  assert.deepEqual(missing, [], "routes of the route table missing from docs/http-api.md");
  assert.deepEqual(unknown, [], "routes in docs/http-api.md the route table does not have");
  // The routes a reader once missed.
  for (const route of ["POST /v1/runs", "GET /v1/audit", "POST /webhooks/provider"]) {
    assert.ok(documented.includes(route), route);
  }
});

Deno.test("docs/http-api.md documents every error code with its status, and no other", () => {
  const rows = section("### Every code").filter((line) => line.startsWith("| ")).slice(2)
    .map((line) => line.split("|").map((cell) => cell.trim()));
  const documented = new Map(rows.map((cells) => [cells[1].replaceAll("`", ""), cells[2]]));
  assert.equal(documented.size, rows.length, "a code documented twice");
  for (const [code, info] of Object.entries(ERROR_CODES)) {
    assert.equal(documented.get(code), String(info.status), `${code}: missing or wrong status`);
  }
  const unknown = [...documented.keys()].filter((code) => !(code in ERROR_CODES));
  assert.deepEqual(unknown, [], "codes in docs/http-api.md the error table does not have");
});

Deno.test("docs/http-api.md names every capability", () => {
  for (const capability of CAPABILITIES) {
    assert.ok(DOC.includes(`\`${capability}\``), capability);
  }
});
