/**
 * The npm package as a Node user gets it: `deno task npm` builds it, `npm pack` packs it, a fresh
 * Node 20+ project installs the tarball (its dependencies, `typescript` and `@types/node` come from
 * the npm registry), `tsc` type-checks a consumer that imports every entry of the package (strict,
 * `nodenext`, the package's own declarations checked too), and Node runs the compiled consumer
 * against a real `serve`: it issues a principal with the SDK, reads `/v1/runtime` with it, meets
 * typed refusals, and streams through the client library.
 */
import assert from "node:assert/strict";
import { REPO_ROOT } from "../support/cli.ts";
import { nodeMajor } from "../support/node_bundle.ts";
import { sharedHeaders, startServer } from "../support/server.ts";
import { DENO_ONLY_EXPORTS, TYPES_NODE_VERSION, TYPESCRIPT_VERSION } from "../../tools/npm.ts";

const major = await nodeMajor();
const config = JSON.parse(await Deno.readTextFile(`${REPO_ROOT}deno.json`)) as {
  name: string;
  version: string;
  license: string;
  exports: Record<string, string>;
  imports: Record<string, string>;
};
const lock = JSON.parse(await Deno.readTextFile(`${REPO_ROOT}deno.lock`)) as {
  specifiers: Record<string, string>;
};

/**
 * The consumer a Node user writes, importing every entry of the package (`subpaths`) as well;
 * `tsc` compiles it to `out/consumer.js`.
 */
function consumerSource(subpaths: readonly string[]): string {
  const specifier = (subpath: string) => `@automation/runtime${subpath.slice(1)}`;
  const entries = subpaths.map((subpath, index) =>
    `import * as entry${index} from "${specifier(subpath)}";`
  ).join("\n");
  const counts = subpaths.map((subpath, index) =>
    `${JSON.stringify(subpath)}: Object.keys(entry${index}).length`
  ).join(", ");
  const simulated = subpaths.includes("./testing") ? SIMULATED : "const simulated = null;";
  return `${entries}
const entries: Record<string, number> = { ${counts} };
${simulated}
${CONSUMER}`;
}

/**
 * The provider simulator of `./testing` served by Node (its `node:http` path), and a run streamed
 * from it by the client library.
 */
const SIMULATED = `
import { ProviderManagedAgentClient as SimulatedClient } from "@automation/runtime/client";
import { agentMessage, ProviderSimulator, usageReport } from "@automation/runtime/testing";

const simulator = await ProviderSimulator.start();
let simulated: { events: string[]; text: string[]; terminal: string };
try {
  const agent = simulator.managedAgents!.addAgent({
    name: "node",
    turn: () => [agentMessage("Hello from the simulator"), usageReport({ inputTokens: 9, outputTokens: 3 })],
  });
  const environment = simulator.managedAgents!.addEnvironment({ name: "node" });
  const client = new SimulatedClient({
    baseUrl: simulator.baseUrl,
    apiKey: simulator.apiKey,
    agentId: agent.id,
    environmentId: environment.id,
  });
  const events: string[] = [];
  const text: string[] = [];
  const result = await client.streamRun({ input: "hello" }, {
    onEvent(event) {
      events.push(event.type);
      if (event.type === "message.completed") text.push(event.text);
    },
  });
  simulated = { events, text, terminal: result.terminal?.type ?? "none" };
} finally {
  await simulator.close();
}
`;

const CONSUMER = `
import assert from "node:assert/strict";
import * as root from "@automation/runtime";
import { ProviderApiClient, readSse, type SseMessage } from "@automation/runtime/client";
import {
  type Capability,
  type RuntimeInfo,
  RuntimeServiceClient,
  RuntimeServiceError,
} from "@automation/runtime/sdk";
// @ts-expect-error: the service needs Deno and is not in the npm package
import type * as Service from "@automation/runtime/server";

// @ts-expect-error: the declarations are real types, not any
const wrong: Capability = "session:nope";

if (typeof (globalThis as { Deno?: unknown }).Deno !== "undefined") throw new Error("not Node");

// One module per concept: the root re-exports the very same classes.
assert.equal(root.RuntimeServiceClient, RuntimeServiceClient);
assert.equal(root.ProviderApiClient, ProviderApiClient);

// AUTOMATION_RUNTIME_URL and AUTOMATION_RUNTIME_TOKEN come from the environment.
const admin = new RuntimeServiceClient({});
const health = await admin.health();
const issued = await admin.createPrincipal({
  capabilities: ["session:read"],
  expiresAt: new Date(Date.now() + 3_600_000),
});
const reader = new RuntimeServiceClient({ token: issued.bearer });
const me: RuntimeInfo = await reader.runtime();

async function refusal(call: () => Promise<unknown>): Promise<object> {
  try {
    await call();
  } catch (error) {
    if (error instanceof RuntimeServiceError) {
      return { status: error.status, code: error.code, correlationId: error.correlationId };
    }
    throw error;
  }
  throw new Error("the call succeeded");
}
const forbidden = await refusal(() =>
  reader.createPrincipal({ capabilities: ["session:read"], expiresAt: new Date(Date.now() + 60_000) })
);
await admin.revokePrincipal(issued.principalId);
const revoked = await refusal(() => reader.runtime());

// The client library's SSE reader runs on the package's one dependency, eventsource-parser.
const frames: SseMessage[] = [];
const body = new Response("event: ping\\ndata: {\\"n\\":1}\\n\\ndata: two\\n\\n").body!;
for await (const frame of readSse(body)) frames.push(frame);

console.log(JSON.stringify({
  node: process.versions.node,
  entries,
  simulated,
  health,
  issuedId: issued.principalId,
  me,
  forbidden,
  revoked,
  frames: frames.map(({ event, data }) => ({ event, data })),
}));
`;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: "nodenext",
    moduleResolution: "nodenext",
    target: "es2022",
    types: ["node"],
    skipLibCheck: false,
    outDir: "out",
  },
  files: ["consumer.ts"],
};

async function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<string> {
  const output = await new Deno.Command(command, {
    args,
    cwd: options.cwd,
    env: options.env,
    clearEnv: options.env !== undefined,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  const stdout = decoder.decode(output.stdout);
  assert.ok(
    output.success,
    `${command} ${args.join(" ")} exited ${output.code}:\n${stdout}${
      decoder.decode(output.stderr)
    }`,
  );
  return stdout;
}

Deno.test({
  name: "the npm package installs into a Node project, type-checks and runs against serve",
  ignore: major === null && !Deno.env.get("CI"),
  async fn() {
    assert.ok(major !== null && major >= 20, `Node 20+ is required, found ${major}`);
    const dir = await Deno.makeTempDir({ prefix: "npm-package-" });
    try {
      // The task, as a user runs it.
      const built = await run(Deno.execPath(), ["task", "npm", "--out", `${dir}/package`], {
        cwd: REPO_ROOT,
      });
      assert.equal(built.trim(), `${dir}/package`);

      const pkg = JSON.parse(await Deno.readTextFile(`${dir}/package/package.json`));
      const subpaths = Object.keys(config.exports).filter((key) =>
        !DENO_ONLY_EXPORTS.includes(key)
      );
      assert.ok(
        subpaths.includes(".") && subpaths.includes("./sdk") && subpaths.includes("./client"),
      );
      assert.equal(pkg.name, config.name);
      assert.equal(pkg.version, config.version);
      assert.equal(pkg.license, config.license);
      assert.equal(pkg.type, "module");
      assert.deepEqual(pkg.engines, { node: ">=20" });
      assert.deepEqual(Object.keys(pkg.exports).sort(), [...subpaths, "./package.json"].sort());
      for (const subpath of subpaths) {
        assert.match(pkg.exports[subpath].types, /^\.\/.+\.d\.ts$/);
        assert.match(pkg.exports[subpath].import, /^\.\/.+\.js$/);
      }
      // Only what the entries import at runtime, at the version deno.lock resolved: none of the
      // service's packages (zod, postgres, jose, the MCP SDK).
      assert.deepEqual(pkg.dependencies, {
        "eventsource-parser": `^${lock.specifiers[config.imports["eventsource-parser"]]}`,
      });

      // npm pack: the compiled entries, README and LICENSE; no TypeScript source, no service.
      const [packed] = JSON.parse(
        await run("npm", ["pack", "--json", "--pack-destination", dir], {
          cwd: `${dir}/package`,
        }),
      ) as { filename: string; files: { path: string }[] }[];
      const files = packed.files.map((file) => file.path);
      for (
        const expected of ["package.json", "README.md", "LICENSE", "npm/mod.js", "sdk/mod.d.ts"]
      ) {
        assert.ok(files.includes(expected), `${expected} is in the tarball`);
      }
      assert.deepEqual(
        files.filter((path) =>
          /^(server|cli|tests)\//.test(path) || (path.endsWith(".ts") && !path.endsWith(".d.ts"))
        ),
        [],
      );

      // A fresh Node project installs the tarball and compiles the consumer.
      const project = `${dir}/consumer`;
      await Deno.mkdir(project);
      await Deno.writeTextFile(
        `${project}/package.json`,
        JSON.stringify({ name: "consumer", private: true, type: "module" }),
      );
      await run("npm", [
        "install",
        "--no-audit",
        "--no-fund",
        "--no-package-lock",
        "--loglevel=error",
        `${dir}/${packed.filename}`,
        `typescript@${TYPESCRIPT_VERSION}`,
        `@types/node@${TYPES_NODE_VERSION}`,
      ], { cwd: project });
      await Deno.writeTextFile(`${project}/consumer.ts`, consumerSource(subpaths));
      await Deno.writeTextFile(`${project}/tsconfig.json`, JSON.stringify(TSCONFIG));
      await run("node", ["node_modules/typescript/bin/tsc", "-p", ".", "--pretty", "false"], {
        cwd: project,
      });

      // Node runs it against a real serve.
      const server = await startServer();
      try {
        const out = JSON.parse(
          await run("node", ["out/consumer.js"], {
            cwd: project,
            env: {
              PATH: Deno.env.get("PATH") ?? "",
              AUTOMATION_RUNTIME_URL: server.url,
              AUTOMATION_RUNTIME_TOKEN: server.bearer,
            },
          }),
        );
        assert.ok(Number(out.node.split(".")[0]) >= 20);
        if (subpaths.includes("./testing")) {
          // The simulator serves from Node, and a run streams from it to completion.
          assert.deepEqual(out.simulated.text, ["Hello from the simulator"]);
          assert.equal(out.simulated.events[0], "run.started");
          assert.equal(out.simulated.terminal, "run.completed");
        } else {
          assert.equal(out.simulated, null);
        }
        // Every entry loads in Node and exports something.
        assert.deepEqual(Object.keys(out.entries).sort(), [...subpaths].sort());
        for (const [subpath, count] of Object.entries(out.entries)) {
          assert.ok(Number(count) > 0, `${subpath} exports nothing`);
        }
        assert.deepEqual(out.health, { ok: true });
        assert.equal(out.me.principalId, out.issuedId);
        assert.deepEqual(out.me.capabilities, ["session:read"]);
        assert.equal(out.forbidden.status, 403);
        assert.equal(out.forbidden.code, "missingCapability");
        assert.equal(out.revoked.status, 401);
        assert.deepEqual(out.frames, [
          { event: "ping", data: '{"n":1}' },
          { data: "two" },
        ]);

        // The service saw the issuance and the revocation.
        const page = await fetch(`${server.url}/v1/principals`, {
          headers: sharedHeaders(server.bearer),
        }).then((response) => response.json());
        const seen = page.principals.find(
          (principal: { principalId: string }) => principal.principalId === out.issuedId,
        );
        assert.ok(seen?.revokedAt, "the principal the consumer issued is revoked");
      } finally {
        await server.stop();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
