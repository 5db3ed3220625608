/**
 * Named principals: `name` and `metadata` at issuance, shown by `GET /v1/principals`,
 * `GET /v1/runtime`, the audit entries about the principal, MCP and `principal list`; refused
 * with 422 and `details` when out of bounds.
 */
import assert from "node:assert/strict";
import { callOk, connect } from "../mcp/_sdk.ts";
import { clientEnv, makeTempHome, runCli } from "../support/cli.ts";
import { startServer } from "../support/server.ts";
import { call, principalBody } from "./_http.ts";

const METADATA = { repo: "acme/api", workflow: "nightly.yml", note: "a, b = c" };

Deno.test("named principals: issuance, list, runtime, audit and MCP carry name and metadata", async () => {
  const server = await startServer();
  const { url, bearer } = server;
  const post = (body: unknown) =>
    call(url, "POST", "/v1/principals", {
      bearer,
      headers: { "idempotency-key": crypto.randomUUID() },
      body,
    });
  try {
    const body = { ...principalBody(), name: "ci: nightly triage ☂", metadata: METADATA };
    const issued = await post(body);
    assert.equal(issued.status, 201, issued.text);
    assert.equal(issued.json.name, body.name);
    assert.deepEqual(issued.json.metadata, METADATA);

    const list = await call(url, "GET", "/v1/principals", { bearer });
    assert.equal(list.status, 200, list.text);
    const entry = list.json.principals.find((p: { principalId: string }) =>
      p.principalId === body.principalId
    );
    assert.equal(entry.name, body.name);
    assert.deepEqual(entry.metadata, METADATA);

    const runtime = await call(url, "GET", "/v1/runtime", { bearer: issued.json.bearer });
    assert.equal(runtime.json.name, body.name);
    assert.deepEqual(runtime.json.metadata, METADATA);

    // An unnamed principal has neither field.
    const plain = await post(principalBody());
    assert.equal("name" in plain.json || "metadata" in plain.json, false);

    const revoked = await call(url, "DELETE", `/v1/principals/${body.principalId}`, { bearer });
    assert.equal(revoked.status, 204, revoked.text);
    const audit = await call(url, "GET", `/v1/audit?principalId=${body.principalId}`, { bearer });
    assert.equal(audit.status, 200, audit.text);
    assert.deepEqual(
      audit.json.entries.map((e: { action: string; subjectName?: string }) => [
        e.action,
        e.subjectName,
      ]),
      [["principal.revoked", body.name], ["principal.issued", body.name]],
    );
    // Never a bearer in what describes a principal.
    for (const text of [list.text, audit.text, runtime.text]) {
      assert.ok(!text.includes(issued.json.bearer));
    }

    const mcp = await connect(url, bearer);
    try {
      const viaMcp = await callOk(mcp, "principal_issue", {
        ...principalBody(),
        name: "mcp host",
        metadata: { host: "editor" },
      });
      assert.equal(viaMcp.name, "mcp host");
      const listed = await callOk(mcp, "principals_list", {});
      const found = listed.principals.find((p: { principalId: string }) =>
        p.principalId === viaMcp.principalId
      );
      assert.equal(found.name, "mcp host");
      assert.deepEqual(found.metadata, { host: "editor" });
    } finally {
      await mcp.close();
    }
  } finally {
    await server.stop();
  }
});

Deno.test("named principals: a name or metadata out of bounds is 422 with the field in details", async () => {
  const server = await startServer();
  try {
    const pairs = Object.fromEntries([...Array(17)].map((_, i) => [`k${i}`, "v"]));
    for (
      const [extra, path] of [
        [{ name: "" }, "name"],
        [{ name: " " }, "name"],
        [{ name: "x".repeat(65) }, "name"],
        [{ name: "line\nbreak" }, "name"],
        [{ name: 7 }, "name"],
        [{ metadata: pairs }, "metadata"],
        [{ metadata: { k: "v".repeat(513) } }, "metadata.k"],
        [{ metadata: { ["k".repeat(65)]: "v" } }, "metadata"],
        [{ metadata: { "has space": "v" } }, "metadata"],
        [{ metadata: { k: 1 } }, "metadata.k"],
        [{ metadata: ["k", "v"] }, "metadata"],
      ] as const
    ) {
      const result = await call(server.url, "POST", "/v1/principals", {
        bearer: server.bearer,
        headers: { "idempotency-key": crypto.randomUUID() },
        body: { ...principalBody(), ...extra },
      });
      assert.equal(result.status, 422, `${JSON.stringify(extra).slice(0, 60)}: ${result.text}`);
      assert.equal(result.json.error.code, "invalidRequest");
      const paths = result.json.error.details.map((d: { path: string }) => d.path);
      assert.ok(paths.some((p: string) => p.startsWith(path)), `${path}: ${paths}`);
    }
    // 64 characters of any script is a name; so are 16 pairs at their bounds.
    const bounds = await call(server.url, "POST", "/v1/principals", {
      bearer: server.bearer,
      headers: { "idempotency-key": crypto.randomUUID() },
      body: {
        ...principalBody(),
        name: "名".repeat(64),
        metadata: Object.fromEntries(
          [...Array(16)].map((_, i) => [`${i}`.padEnd(64, "k"), "v".repeat(512)]),
        ),
      },
    });
    assert.equal(bounds.status, 201, bounds.text);
  } finally {
    await server.stop();
  }
});

Deno.test("principal issue --name --metadata; principal list shows the name", async () => {
  const server = await startServer();
  const temp = await makeTempHome();
  try {
    const env = clientEnv(temp, server);
    const issued = await runCli([
      "principal",
      "issue",
      "--capabilities",
      "session:read",
      "--name",
      "ci: nightly",
      "--metadata",
      "repo=acme/api,workflow=nightly.yml",
    ], { env });
    assert.equal(issued.code, 0, issued.stderr);
    assert.equal(JSON.parse(issued.stdout).name, "ci: nightly");
    const json = await runCli([
      "principal",
      "issue",
      "--capabilities",
      "session:read",
      "--metadata",
      '{"note": "a, b"}',
    ], { env });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout).metadata, { note: "a, b" });

    const listed = await runCli(["principal", "list"], { env });
    assert.equal(listed.code, 0, listed.stderr);
    const principals = JSON.parse(listed.stdout);
    assert.deepEqual(principals.map((p: { name?: string }) => p.name), ["ci: nightly", undefined]);
    assert.deepEqual(principals[0].metadata, { repo: "acme/api", workflow: "nightly.yml" });

    for (
      const flag of [
        ["--name", ""],
        ["--name", "x".repeat(65)],
        ["--metadata", "novalue"],
        ["--metadata", "a=1,a=2"],
        ["--metadata", "{not json"],
        ["--metadata", '{"k": 1}'],
      ]
    ) {
      const refused = await runCli(
        ["principal", "issue", "--capabilities", "session:read", ...flag],
        { env },
      );
      assert.equal(refused.code, 2, `${flag.join(" ")}: ${refused.stderr}`);
    }
  } finally {
    await temp.cleanup();
    await server.stop();
  }
});
