/**
 * Forged and undecodable cursors on every paged route (issue 34, item 12): `GET /v1/runs`,
 * `GET /v1/audit`, `GET /v1/principals` and their MCP tools answer 422 `invalidRequest` naming
 * the cursor; never 503, never an error-level log line, never the first page as if no cursor was
 * given. A cursor of another list's shape is refused too (the audit list's at the run list and
 * back).
 */
import assert from "node:assert/strict";
import { encodeCursor } from "../../server/store/run_types.ts";
import { callError, connect, listen } from "../mcp/_sdk.ts";
import { assertCode, startGateway } from "./_harness.ts";

/** Cursors no list ever answered: `[]`, garbage, another shape, an object, a bad seq. */
const FORGED = [
  "W10", // base64url of []
  "garbage",
  "!!!",
  "%00",
  encodeCursor([]),
  encodeCursor([1, 2, 3]),
  encodeCursor(["", ""]),
  btoa('{"a":1}').replace(/=+$/, ""),
  encodeCursor([0]),
  encodeCursor([-5]),
  encodeCursor([1.5]),
  "A".repeat(600),
];

Deno.test("cursors: a forged cursor is 422 invalidRequest on every paged route and tool", async (t) => {
  const gateway = await startGateway();
  gateway.holdTurns(true);
  const listener = listen((request) => gateway.server.handler(request));
  const mcp = await connect(listener.url, gateway.admin);
  try {
    for (let i = 0; i < 3; i++) {
      const started = await gateway.request("POST", "/v1/runs", { body: { input: `run ${i}` } });
      assert.equal(started.status, 201, started.text);
      await gateway.issue(["session:read"]);
    }
    const runPage = await gateway.request("GET", "/v1/runs?limit=1");
    const auditPage = await gateway.request("GET", "/v1/audit?limit=1");
    const principalPage = await gateway.request("GET", "/v1/principals?limit=1");
    const genuine = {
      runs: runPage.json.nextCursor as string,
      audit: auditPage.json.nextCursor as string,
      principals: principalPage.json.nextCursor as string,
    };
    const errorsBefore = gateway.logs.filter((line) => JSON.parse(line).level === "error").length;

    const routes = [
      { path: "/v1/runs", tool: "run_list", other: genuine.audit },
      { path: "/v1/runs?state=running", tool: "run_list", other: genuine.audit },
      { path: "/v1/audit", tool: "audit_list", other: genuine.runs },
      { path: "/v1/principals", tool: "principals_list", other: genuine.runs },
    ];
    for (const route of routes) {
      await t.step(`${route.path}: forged cursors and another list's cursor`, async () => {
        for (const cursor of [...FORGED, route.other]) {
          const separator = route.path.includes("?") ? "&" : "?";
          const answer = await gateway.request(
            "GET",
            `${route.path}${separator}cursor=${encodeURIComponent(cursor)}`,
          );
          assertCode(answer, 422, "invalidRequest");
          assert.equal(answer.json.error.details[0].path, "cursor", cursor);
          if (cursor.length > 512) continue;
          const state = route.path.includes("state=") ? { state: "running" } : {};
          const refused = await callError(mcp, route.tool, { cursor, ...state });
          assert.equal(refused.code, "invalidRequest", `${route.tool} ${cursor}`);
        }
      });
    }

    await t.step("the genuine cursors still page", async () => {
      const runs = await gateway.request("GET", `/v1/runs?limit=1&cursor=${genuine.runs}`);
      assert.equal(runs.status, 200, runs.text);
      assert.equal(runs.json.runs.length, 1);
      assert.notEqual(runs.json.runs[0].runId, runPage.json.runs[0].runId);
      const audit = await gateway.request("GET", `/v1/audit?limit=1&cursor=${genuine.audit}`);
      assert.equal(audit.status, 200, audit.text);
      assert.ok(audit.json.entries[0].seq < auditPage.json.entries[0].seq);
    });

    const errorsAfter = gateway.logs.filter((line) => JSON.parse(line).level === "error").length;
    assert.equal(errorsAfter, errorsBefore, "no error-level log line");
  } finally {
    await mcp.close();
    await listener.close();
    await gateway.close();
  }
});
