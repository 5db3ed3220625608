/**
 * The settings table of `serve` (`server/settings.ts`) and what is derived from it: which place a
 * value comes from, how an invalid one is reported, what the Deploy-style entry reads, the help of
 * `serve` and the generated section of `docs/cli.md`.
 */
import assert from "node:assert/strict";
import { UsageError } from "../../cli/_args.ts";
import { parseSettingArgs, settingsHelp } from "../../cli/_settings.ts";
import { PROVIDER_VARIABLES } from "../../server/runs/provider.ts";
import {
  resolveSettings,
  SERVE_SETTINGS,
  serverOptionsOf,
  SettingError,
} from "../../server/settings.ts";
import { CLI_DOC, renderCliDoc } from "../../tools/cli_doc.ts";

const settings = Object.values(SERVE_SETTINGS);

function serve(args: string[], env: Record<string, string> = {}) {
  const parsed = parseSettingArgs(args, { command: "serve", settings: SERVE_SETTINGS, env });
  assert.equal(parsed.help, false);
  return (parsed as Extract<typeof parsed, { help: false }>).settings;
}

Deno.test("docs/cli.md holds the sections generated from the command and settings tables", async () => {
  const committed = await Deno.readTextFile(CLI_DOC);
  assert.ok(
    renderCliDoc(committed) === committed,
    "a generated section of docs/cli.md differs from the command or settings table: run " +
      "`deno task docs`",
  );
});

Deno.test("settings: each flag and each variable is declared once, each default within bounds", () => {
  const flags = settings.flatMap((setting) => setting.flag ?? []);
  const variables = settings.flatMap((setting) => setting.env ?? []);
  assert.equal(new Set(flags).size, flags.length);
  assert.equal(new Set(variables).size, variables.length);
  for (const setting of settings) {
    if (setting.default === undefined || typeof setting.default !== "number") continue;
    assert.equal(setting.parser.parse(String(setting.default), "default"), setting.default);
  }
  // The provider file holds the provider settings under the names of their variables.
  assert.deepEqual(
    settings.flatMap((setting) => setting.providerFile ?? []),
    [
      PROVIDER_VARIABLES.baseUrl,
      PROVIDER_VARIABLES.defaultAgentId,
      PROVIDER_VARIABLES.defaultEnvironmentId,
    ],
  );
});

Deno.test("settings: a flag wins over its variable, the variable over the default", () => {
  const env = {
    AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS: "9",
    AUTOMATION_RUNTIME_METRICS_PORT: "9464",
    AUTOMATION_RUNTIME_STORE: "/srv/store.kv",
    AUTOMATION_RUNTIME_DEFAULT_AGENT_ID: "agent_env",
  };
  const flagged = serve(
    ["--max-active-runs", "5", "--store", "postgres://db/app", "--default-agent", "agent_flag"],
    env,
  );
  assert.equal(flagged.maxActiveRuns, 5);
  assert.equal(flagged.store, "postgres://db/app");
  assert.equal(flagged.defaultAgent, "agent_flag");
  assert.equal(flagged.metricsPort, 9464);
  const fromEnv = serve([], env);
  assert.equal(fromEnv.maxActiveRuns, 9);
  assert.equal(fromEnv.store, "/srv/store.kv");
  assert.equal(fromEnv.defaultAgent, "agent_env");
  const defaults = serve([]);
  assert.equal(defaults.maxActiveRuns, 1000);
  assert.equal(defaults.port, 7777);
  assert.equal(defaults.hostname, "127.0.0.1");
  assert.equal(defaults.metricsPort, undefined);
  assert.equal(defaults.store, undefined);
  assert.equal(defaults.runLeaseMs, 15_000);
  assert.equal(defaults.retentionDays, 30);
});

Deno.test("settings: an empty variable is unset, except a list, which then allows nothing", () => {
  const resolved = serve([], {
    AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS: "",
    AUTOMATION_RUNTIME_METRICS_PORT: "",
    AUTOMATION_RUNTIME_STORE: "",
    AUTOMATION_RUNTIME_DEFAULT_AGENT_ID: "  ",
    AUTOMATION_RUNTIME_MCP_ALLOWED_ORIGINS: "",
    AUTOMATION_RUNTIME_CORS_ORIGINS: "",
  });
  assert.equal(resolved.maxActiveRuns, 1000);
  assert.equal(resolved.metricsPort, undefined);
  assert.equal(resolved.store, undefined);
  assert.equal(resolved.defaultAgent, undefined);
  assert.deepEqual(resolved.mcpAllowedOrigins, []);
  assert.deepEqual(resolved.corsOrigins, []);
  assert.throws(
    () => serve([], { AUTOMATION_RUNTIME_METRICS_HOSTNAME: "" }),
    { message: "AUTOMATION_RUNTIME_METRICS_HOSTNAME must not be empty" },
  );
});

Deno.test("settings: an invalid flag is a usage error, an invalid variable an error naming it", () => {
  for (
    const [args, message] of [
      [["--port", "70000"], "--port must be an integer from 0 to 65535"],
      [["--max-body-bytes", "0"], "--max-body-bytes must be an integer from 1 to 2147483647"],
      [["--hostname", " "], "--hostname must not be empty"],
      [["--run-lease-ms", "299"], "--run-lease-ms must be an integer from 300 to 600000"],
      [["--cors-origins", "*"], '--cors-origins: "*" is not an origin'],
      [["--bogus"], "Unknown option --bogus"],
    ] as const
  ) {
    assert.throws(() => serve([...args]), (error: Error) => {
      assert.ok(error instanceof UsageError, `${args.join(" ")}: ${error}`);
      assert.ok(error.message.startsWith(message), error.message);
      return true;
    });
  }
  for (
    const [variable, value, message] of [
      ["AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS", "0", " must be an integer from 1 to 1000000"],
      ["AUTOMATION_RUNTIME_RETENTION_DAYS", "x", " must be an integer from 1 to 36500"],
      ["AUTOMATION_RUNTIME_MCP_ALLOWED_HOSTS", "a b", ": MCP allowed host"],
    ] as const
  ) {
    assert.throws(() => serve([], { [variable]: value }), (error: Error) => {
      assert.ok(error instanceof SettingError && !(error instanceof UsageError));
      assert.equal(error.origin, "environment");
      assert.ok(error.message.startsWith(`${variable}${message}`), error.message);
      return true;
    });
  }
  // With --help nothing else is read: a broken variable does not stop the help.
  const help = parseSettingArgs(["--help"], {
    command: "serve",
    settings: SERVE_SETTINGS,
    env: { AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS: "x" },
  });
  assert.equal(help.help, true);
});

Deno.test("settings: the Deploy-style entry reads only the variables marked for it", () => {
  const env = {
    AUTOMATION_RUNTIME_RETENTION_DAYS: "3",
    AUTOMATION_RUNTIME_CORS_ORIGINS: "https://app.example",
    AUTOMATION_RUNTIME_MAX_ACTIVE_RUNS: "not read there",
    AUTOMATION_RUNTIME_METRICS_PORT: "9464",
  };
  const deploy = resolveSettings(SERVE_SETTINGS, { env, deploy: true });
  assert.equal(deploy.retentionDays, 3);
  assert.deepEqual(deploy.corsOrigins, ["https://app.example"]);
  assert.equal(deploy.maxActiveRuns, 1000);
  assert.equal(deploy.metricsPort, undefined);
  const options = serverOptionsOf(deploy);
  assert.equal(options.retentionMs, 3 * 86_400_000);
  assert.deepEqual(options.cors, { allowedOrigins: ["https://app.example"] });
  assert.deepEqual(options.mcp, {
    allowedOrigins: undefined,
    allowedHosts: undefined,
    maxReplayBytesPerSession: 1024 * 1024,
    maxReplayBytes: 64 * 1024 * 1024,
  });
});

Deno.test("settings: the stream, replay and webhook intake bounds reach the server options", () => {
  const defaults = serverOptionsOf(resolveSettings(SERVE_SETTINGS, { env: {} }));
  assert.equal(defaults.maxEventStreamsPerPrincipal, 16);
  assert.deepEqual(defaults.webhookIntake, { maxBodyBytes: 64 * 1024, maxUnverified: 16 });
  const set = serverOptionsOf(resolveSettings(SERVE_SETTINGS, {
    flags: new Map([
      ["max-event-streams-per-principal", "4"],
      ["mcp-replay-bytes-per-session", "65536"],
      ["webhook-max-unverified", "2"],
    ]),
    env: {
      AUTOMATION_RUNTIME_MCP_REPLAY_BYTES: "1048576",
      AUTOMATION_RUNTIME_WEBHOOK_MAX_BODY_BYTES: "8192",
    },
  }));
  assert.equal(set.maxEventStreamsPerPrincipal, 4);
  assert.equal(set.mcp.maxReplayBytesPerSession, 65_536);
  assert.equal(set.mcp.maxReplayBytes, 1_048_576);
  assert.deepEqual(set.webhookIntake, { maxBodyBytes: 8192, maxUnverified: 2 });
  assert.throws(
    () =>
      resolveSettings(SERVE_SETTINGS, {
        flags: new Map([["max-event-streams-per-principal", "0"]]),
        env: {},
      }),
    /--max-event-streams-per-principal must be an integer from 1/,
  );
});

Deno.test("settings: serve --help shows every flag with its bounds, variable and default", () => {
  const help = settingsHelp(SERVE_SETTINGS);
  for (const setting of settings) {
    assert.ok(help.includes(`--${setting.flag} ${setting.placeholder}`), setting.flag);
    if (setting.env !== undefined) assert.ok(help.includes(`$${setting.env}`), setting.env);
    if (setting.parser.accepts !== undefined) {
      assert.ok(help.includes(setting.parser.accepts), setting.parser.accepts);
    }
  }
  assert.ok(!help.includes("`"), "no Markdown in the help");
  for (const line of help.split("\n")) assert.ok(line.length <= 96, line);
});
