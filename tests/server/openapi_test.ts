/**
 * The OpenAPI document: the committed `docs/openapi.json` is the generated one, a maintained
 * validator accepts it, the server serves it without authentication, and the contract check the
 * black-box tests run catches an answer that drifts from it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import { checkAnswer, routeContract } from "../../server/openapi/contract.ts";
import { renderOpenApiDocument } from "../../server/openapi/document.ts";
import { defaultRouteTable } from "../../server/openapi/table.ts";
import { runRoutes } from "../../server/routes/runs.ts";
import type { RunGateway } from "../../server/runs/runs.ts";
import { startServer } from "../support/server.ts";
import { assertKeepsContract } from "../support/contract.ts";

const COMMITTED = new URL("../../docs/openapi.json", import.meta.url);

Deno.test("docs/openapi.json is the document generated from the route table", async () => {
  const generated = renderOpenApiDocument(await defaultRouteTable());
  const committed = await Deno.readTextFile(COMMITTED);
  assert.ok(
    committed === generated,
    "docs/openapi.json differs from the generated document: run `deno task openapi`",
  );
});

Deno.test("an independent OpenAPI validator accepts the document as OpenAPI 3.1", async () => {
  const document = JSON.parse(await Deno.readTextFile(COMMITTED));
  const validator = new Validator();
  const result = await validator.validate(document);
  assert.equal(validator.version, "3.1");
  assert.deepEqual(result.errors ?? [], []);
  assert.equal(result.valid, true);
});

Deno.test("the document lists every route with its statuses, codes, headers and bearer", async () => {
  const document = JSON.parse(await Deno.readTextFile(COMMITTED));
  const start = document.paths["/v1/runs"].post;
  assert.deepEqual(start.security, [{ bearer: [] }]);
  assert.deepEqual(
    start.parameters.map((parameter: { $ref: string }) => parameter.$ref),
    [
      "#/components/parameters/InterfaceVersion",
      "#/components/parameters/CorrelationId",
      "#/components/parameters/Deadline",
      "#/components/parameters/IdempotencyKey",
    ],
  );
  assert.deepEqual(Object.keys(start.responses), [
    "201",
    "400",
    "401",
    "403",
    "408",
    "409",
    "413",
    "415",
    "422",
    "429",
    "500",
    "502",
    "503",
  ]);
  const codes503 = start.responses["503"].content["application/json"].schema.allOf[1]
    .properties.error.properties.code.enum;
  assert.deepEqual(codes503, [
    "providerNotConfigured",
    "providerUnavailable",
    "shuttingDown",
    "storeUnavailable",
  ]);
  assert.ok(start.requestBody.content["application/json"].schema.required.includes("input"));
  assert.deepEqual(document.paths["/healthz"].get.security, []);
  assert.equal(document.components.securitySchemes.bearer.scheme, "bearer");
  assert.ok(document.paths["/v1/runs/{runId}"].get.parameters.some(
    (parameter: { name?: string; in?: string }) =>
      parameter.name === "runId" && parameter.in === "path",
  ));
  for (const path of ["/v1/mcp", "/v1/principals/{principalId}", "/v1/audit", "/openapi.json"]) {
    assert.ok(path in document.paths, path);
  }
});

Deno.test("a route without a declaration stops the generation", () => {
  const routes = runRoutes({} as RunGateway).map((route) => ({
    ...route,
    path: `/x${route.path}`,
  }));
  assert.throws(() => renderOpenApiDocument(routes), /has no declaration/);
});

Deno.test("GET /openapi.json serves the committed document without authentication", async () => {
  // A provider key and a webhook secret, so this server has every route the document describes
  // (webhook intake exists only with a secret); neither may appear in the document.
  const providerKey = `sk-test-${crypto.randomUUID()}`;
  const webhookSecret = `whsec_${btoa(crypto.randomUUID())}`;
  const server = await startServer({
    env: {
      AUTOMATION_RUNTIME_PROVIDER_API_KEY: providerKey,
      AUTOMATION_RUNTIME_PROVIDER_WEBHOOK_SECRETS: webhookSecret,
      AUTOMATION_RUNTIME_PROVIDER_BASE_URL: "http://127.0.0.1:9",
    },
  });
  try {
    const response = await fetch(`${server.url}/openapi.json`);
    const text = await response.text();
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.equal(text, await Deno.readTextFile(COMMITTED));
    assert.ok(!text.includes(server.bearer), "the document holds no bearer");
    assert.ok(!text.includes(providerKey), "nor the provider key");
    assert.ok(!text.includes(webhookSecret.slice(6)), "nor a webhook secret");
    await assertKeepsContract("GET", "/openapi.json", {
      status: response.status,
      headers: response.headers,
      text,
    });
  } finally {
    await server.stop();
  }
});

Deno.test("the contract check refuses a drifted body, status, code or header", async () => {
  const routes = await defaultRouteTable();
  const runtime = routeContract(routes.find((route) => route.path === "/v1/runtime")!)!;
  const headers = new Headers({
    "content-type": "application/json",
    "x-content-type-options": "nosniff",
  });
  const body = {
    interfaceVersion: "2026-07-23",
    principalId: crypto.randomUUID(),
    capabilities: ["session:read"],
    expiresAt: new Date().toISOString(),
    runs: false,
    maxActiveRuns: 8,
  };
  assert.deepEqual(checkAnswer(runtime, { status: 200, headers, text: JSON.stringify(body) }), []);
  assert.match(
    checkAnswer(runtime, { status: 200, headers, text: JSON.stringify({ ...body, extra: 1 }) })
      .join(),
    /Unrecognized key/,
  );
  assert.match(
    checkAnswer(runtime, { status: 201, headers, text: "{}" }).join(),
    /status 201 is not in the contract/,
  );
  const error = (code: string) =>
    JSON.stringify({ error: { code, layer: "interface", message: "m", correlationId: "c" } });
  assert.match(
    checkAnswer(runtime, { status: 400, headers, text: error("principalExists") }).join(),
    /400 error body/,
  );
  assert.match(
    checkAnswer(runtime, { status: 401, headers, text: error("authenticationFailed") }).join(),
    /www-authenticate/,
  );
  await assert.rejects(
    assertKeepsContract("GET", "/v1/runtime", { status: 200, headers, text: "{}" }),
    /outside the OpenAPI contract/,
  );
});

Deno.test("the document describes the webhook intake, its body bound and its intake cap", async () => {
  const document = JSON.parse(await Deno.readTextFile(COMMITTED));
  const intake = document.paths["/webhooks/provider"]?.post;
  assert.ok(intake !== undefined, "POST /webhooks/provider is in the document");
  assert.deepEqual(intake.security, []);
  for (const status of ["204", "401", "408", "413", "429"]) {
    assert.ok(intake.responses[status] !== undefined, `answers ${status}`);
  }
  assert.match(intake.responses["429"].description, /resourceExhausted/);
});
