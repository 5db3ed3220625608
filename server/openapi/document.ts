/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the server's route table: each
 * route's contract (`contract.ts`) gives its statuses, bodies and error codes, its request body
 * schema is the one the body rule validates with (zod 4, converted with `z.toJSONSchema`), and
 * the shared headers and the bearer come from the route's kind. Served at `GET /openapi.json`
 * and written to `docs/openapi.json` by `deno task openapi`; a test fails when the two differ.
 *
 * @module
 */
import { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "../errors.ts";
import type { RouteDefinition } from "../router.ts";
import { isLazyBodySchema } from "../schemas/lazy.ts";
import { INTERFACE_VERSION } from "../../wire/mod.ts";
import { RETRY_AFTER_CODES, type RouteContract, routeContract } from "./contract.ts";
import { errorSchema, NAMED_SCHEMAS } from "./schemas.ts";

const NAMES = new Map<z.ZodType, string>(
  Object.entries(NAMED_SCHEMAS).map(([name, schema]) => [schema, name]),
);

type Json = Record<string, unknown>;

const REASONS: Readonly<Record<number, string>> = {
  400: "Bad request",
  401: "Not authenticated",
  403: "Forbidden",
  404: "Not found",
  405: "Method not allowed",
  406: "Not acceptable",
  408: "Deadline exceeded",
  409: "Conflict",
  413: "Payload too large",
  415: "Unsupported media type",
  422: "Unprocessable",
  429: "Too many requests",
  500: "Internal error",
  502: "Provider error",
  503: "Unavailable",
};

function jsonSchema(schema: z.ZodType, io: "input" | "output"): Json {
  const converted = z.toJSONSchema(schema, { target: "draft-2020-12", io }) as Json;
  delete converted.$schema;
  return converted;
}

/**
 * Request body schema of a route: the zod schema its body rule validates with (a lazy one must
 * have been loaded: {@linkcode loadBodySchemas}).
 */
function requestSchema(route: RouteDefinition): Json {
  const declared = route.body;
  const body = declared !== undefined && isLazyBodySchema(declared) ? declared.loaded() : declared;
  if (typeof body === "object" && body !== null && "_zod" in body) {
    return jsonSchema(body as unknown as z.ZodType, "input");
  }
  throw new Error(`Route ${route.method} ${route.path} has a body but no loaded zod schema`);
}

const COMMON_RESPONSE_HEADERS: Json = {
  "x-content-type-options": { $ref: "#/components/headers/ContentTypeOptions" },
  "x-interface-version": { $ref: "#/components/headers/InterfaceVersionEcho" },
  "x-correlation-id": { $ref: "#/components/headers/CorrelationIdEcho" },
};

function operationId(contract: RouteContract): string {
  const words = contract.pattern.split("/").filter((part) => part !== "" && part !== "v1")
    .map((part) => part.startsWith(":") ? `by_${part.slice(1)}` : part.replace(/\W/g, "_"));
  return [contract.method.toLowerCase(), ...words].join("_");
}

function operation(contract: RouteContract): Json {
  const { route, declaration } = contract;
  const parameters: Json[] = [];
  for (const part of contract.pattern.split("/")) {
    if (part.startsWith(":")) {
      parameters.push({
        name: part.slice(1),
        in: "path",
        required: true,
        schema: { type: "string", minLength: 1 },
      });
    }
  }
  if (route.kind === "shared") {
    for (const name of ["InterfaceVersion", "CorrelationId", "Deadline"]) {
      parameters.push({ $ref: `#/components/parameters/${name}` });
    }
    if (route.idempotent) parameters.push({ $ref: "#/components/parameters/IdempotencyKey" });
  }
  for (const query of declaration.query ?? []) {
    parameters.push({
      name: query.name,
      in: "query",
      required: false,
      description: query.description,
      schema: query.schema,
    });
  }
  const responses: Json = {};
  for (const [status, answer] of contract.answers) {
    const headers: Json = { ...COMMON_RESPONSE_HEADERS };
    for (const name of answer.headers ?? []) headers[name] = { schema: { type: "string" } };
    if (route.idempotent) {
      headers["idempotent-replayed"] = {
        description: "`true` on a replayed answer",
        schema: { type: "string", enum: ["true"] },
      };
    }
    const entry: Json = { description: answer.description, headers };
    const content: Json = {};
    if (answer.schema !== undefined && route.method !== "HEAD") {
      content["application/json"] = {
        schema: NAMES.has(answer.schema)
          ? { $ref: `#/components/schemas/${NAMES.get(answer.schema)}` }
          : jsonSchema(answer.schema, "output"),
      };
    }
    if (answer.contentType !== undefined) {
      content[answer.contentType] = { schema: { type: "string" } };
    }
    if (Object.keys(content).length > 0) entry.content = content;
    responses[String(status)] = entry;
  }
  for (const [status, codes] of contract.errors) {
    const headers: Json = { ...COMMON_RESPONSE_HEADERS };
    if (status === 401) headers["www-authenticate"] = { schema: { type: "string" } };
    if (status === 405) headers["allow"] = { schema: { type: "string" } };
    if (codes.some((code) => RETRY_AFTER_CODES.has(code))) {
      headers["retry-after"] = { description: "seconds", schema: { type: "string" } };
    }
    const schema = contract.jsonRpcErrors.includes(status)
      ? { oneOf: [errorJson(codes), { $ref: "#/components/schemas/JsonRpcError" }] }
      : errorJson(codes);
    const entry: Json = {
      description: `${REASONS[status] ?? "Error"}: ${
        codes.map((code) => `\`${code}\``).join(", ")
      }`,
      headers,
    };
    if (route.method !== "HEAD") entry.content = { "application/json": { schema } };
    responses[String(status)] = entry;
  }
  for (const status of contract.jsonRpcErrors) {
    if (contract.errors.has(status)) continue;
    responses[String(status)] = {
      description: "A JSON-RPC error of the MCP transport",
      headers: { ...COMMON_RESPONSE_HEADERS },
      content: { "application/json": { schema: { $ref: "#/components/schemas/JsonRpcError" } } },
    };
  }
  if (contract.providerShape === true) {
    for (const range of ["4XX", "5XX"]) {
      responses[range] = {
        description: "A refusal in the provider's error shape (the gateway's, or the provider's " +
          "passed on), with `x-should-retry: false` when a retry cannot change it",
        headers: { "request-id": { schema: { type: "string" } } },
        content: {
          "application/json": { schema: { $ref: "#/components/schemas/ProviderErrorBody" } },
        },
      };
    }
  }
  const result: Json = {
    operationId: operationId(contract),
    summary: declaration.summary,
    ...(declaration.description !== undefined ? { description: declaration.description } : {}),
    tags: [declaration.tag],
    security: route.kind === "public" || route.authentication === "none"
      ? []
      : route.kind === "provider"
      ? [{ bearer: [] }, { providerKey: [] }]
      : [{ bearer: [] }],
    ...(route.capability !== undefined ? { "x-capability": route.capability } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
  };
  if (declaration.rawBody !== undefined) {
    result.requestBody = {
      required: true,
      description: declaration.rawBody.description,
      content: { [declaration.rawBody.contentType]: { schema: {} } },
    };
  } else if (route.body !== undefined) {
    result.requestBody = {
      required: true,
      content: { "application/json": { schema: requestSchema(route) } },
    };
  }
  result.responses = responses;
  return result;
}

/** The error body with its `code` limited to `codes`: the shared body, narrowed. */
function errorJson(codes: readonly ErrorCode[]): Json {
  return {
    allOf: [
      { $ref: "#/components/schemas/ErrorBody" },
      {
        type: "object",
        properties: {
          error: { type: "object", properties: { code: { type: "string", enum: [...codes] } } },
        },
      },
    ],
  };
}

/**
 * Builds the document from the route table.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { healthRoutes } from "../routes/health.ts";
 * import { buildOpenApiDocument } from "./document.ts";
 * const document = buildOpenApiDocument(healthRoutes());
 * assert.equal(document.openapi, "3.1.1");
 * assert.ok("/healthz" in (document.paths as Record<string, unknown>));
 * ```
 */
export function buildOpenApiDocument(routes: readonly RouteDefinition[]): Json {
  const paths: Record<string, Json> = {};
  const seen = new Set<string>();
  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const contract = routeContract(route);
    if (contract === null) continue;
    const path = route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
    (paths[path] ??= {})[route.method.toLowerCase()] = operation(contract);
  }
  const sorted: Record<string, Json> = {};
  for (const path of Object.keys(paths).sort()) sorted[path] = paths[path];
  const codes = Object.entries(ERROR_CODES).map(([code, info]) =>
    `| \`${code}\` | ${info.status} |`
  );
  return {
    openapi: "3.1.1",
    info: {
      title: "automation-runtime",
      version: INTERFACE_VERSION,
      description: "The HTTP API of `automation-runtime serve`. Every refusal is the error body " +
        "with a stable `code`; an unknown path answers 404 `notFound`, a known path under " +
        "another method 405 `methodNotAllowed` with `Allow`. Under `/provider` (tag " +
        "`provider`: the provider's own API through the gateway) every refusal is instead in the " +
        "provider's error shape, `ProviderErrorBody`, with the service's code in " +
        "`error.details.error_code`.\n\n| code | status |\n|---|---|\n" +
        codes.join("\n"),
    },
    paths: sorted,
    components: {
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "A principal's bearer (`art_...`), only ever in `Authorization`.",
        },
        providerKey: {
          type: "apiKey",
          in: "header",
          name: "x-api-key",
          description: "On `/provider` only: a principal's bearer as the provider API's key.",
        },
      },
      parameters: {
        InterfaceVersion: {
          name: "x-interface-version",
          in: "header",
          required: true,
          schema: { type: "string", enum: [INTERFACE_VERSION] },
        },
        CorrelationId: {
          name: "x-correlation-id",
          in: "header",
          required: true,
          description: "A UUID chosen by the caller per request.",
          schema: { type: "string", format: "uuid" },
        },
        Deadline: {
          name: "x-deadline",
          in: "header",
          required: true,
          description: "RFC 3339, in the future and at most 300 s ahead.",
          schema: { type: "string", format: "date-time" },
        },
        IdempotencyKey: {
          name: "idempotency-key",
          in: "header",
          required: true,
          description: "1 to 128 printable ASCII characters; the same key replays the answer.",
          schema: { type: "string", minLength: 1, maxLength: 128 },
        },
      },
      headers: {
        ContentTypeOptions: { schema: { type: "string", enum: ["nosniff"] } },
        InterfaceVersionEcho: {
          description: "The request's x-interface-version, echoed when sent.",
          schema: { type: "string" },
        },
        CorrelationIdEcho: {
          description: "The request's x-correlation-id, echoed when sent.",
          schema: { type: "string" },
        },
      },
      schemas: {
        ...Object.fromEntries(
          Object.entries(NAMED_SCHEMAS).map((
            [name, schema],
          ) => [name, jsonSchema(schema, "output")]),
        ),
        ErrorBody: jsonSchema(errorSchema(Object.keys(ERROR_CODES) as ErrorCode[]), "output"),
        JsonRpcError: {
          type: "object",
          properties: {
            jsonrpc: { const: "2.0" },
            error: { type: "object" },
            id: {},
          },
          required: ["jsonrpc", "error"],
        },
      },
    },
  };
}

/**
 * The document as served and committed: JSON, two-space indented, with a final newline.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { healthRoutes } from "../routes/health.ts";
 * import { renderOpenApiDocument } from "./document.ts";
 * assert.equal(JSON.parse(renderOpenApiDocument(healthRoutes())).openapi, "3.1.1");
 * ```
 */
export function renderOpenApiDocument(routes: readonly RouteDefinition[]): string {
  return JSON.stringify(buildOpenApiDocument(routes), null, 2) + "\n";
}
