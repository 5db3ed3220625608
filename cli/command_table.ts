/**
 * The command table of `automation-runtime`: every command declared once, with its positionals,
 * flags (placeholder, default, meaning), the environment variables it reads and its exit codes.
 * Everything else is derived from it: the argument parsing of each command and its `--help`
 * (`cli/_help.ts`), the command list of `automation-runtime --help`, and the command sections of
 * `docs/cli.md` (`deno task docs`, checked by a test). `serve`'s flags are its settings table
 * (`server/settings.ts`).
 *
 * Texts may mark code with backticks: `docs/cli.md` keeps them, a terminal shows the words alone.
 *
 * One file because it is one concept: the table is data, command by command.
 *
 * @module
 */
import { DEFAULT_BOOTSTRAP_CAPABILITIES, DEFAULT_TTL_DAYS } from "../server/bootstrap/variables.ts";
import { SECRET_FILE_VARIABLE } from "../server/bootstrap/resolve.ts";
import { PROVIDER_FILE_VARIABLE, PROVIDER_VARIABLES } from "../server/runs/provider.ts";
import { SERVE_SETTINGS, type SettingTable } from "../server/settings.ts";
import {
  AUDIT_ACTIONS,
  BUDGET_PERIODS,
  CAPABILITIES,
  RUN_STATES,
  USAGE_GROUPS,
} from "../wire/mod.ts";
import { PROGRAM } from "./_output.ts";

export { PROVIDER_FILE_VARIABLE, SECRET_FILE_VARIABLE };

export { PROGRAM };

/** Lifetime of an issued principal when `principal issue` gets no `--ttl-days`, in days. */
export const DEFAULT_PRINCIPAL_TTL_DAYS = 7;

/** One flag of a command. */
export interface FlagSpec {
  /** The flag without its dashes (`ttl-days`). */
  readonly name: string;
  /** The placeholder of its value (`N`); absent: a flag without a value. */
  readonly placeholder?: string;
  /** What it does, and what it accepts. */
  readonly help: string;
  /** The default as help and docs show it; absent: none worth naming. */
  readonly default?: string;
  /** The command refuses to run without it. */
  readonly required?: boolean;
}

/** One exit code of a command and when it is returned. */
export interface ExitCodeSpec {
  /** The code. */
  readonly code: number;
  /** When. */
  readonly when: string;
}

/** One command (or subcommand) of the program. */
export interface CommandSpec {
  /** The words that name it, such as `principal issue`. */
  readonly name: string;
  /** Its positionals in order, such as `["ID"]`. */
  readonly positionals: readonly string[];
  /** One line for the command list. */
  readonly summary: string;
  /** What it does, a paragraph for its help and its section of `docs/cli.md`. */
  readonly description: string;
  /** Its flags in the order of its help. */
  readonly flags: readonly FlagSpec[];
  /** Its flags as a settings table instead (`serve`). */
  readonly settings?: SettingTable;
  /** The environment variables it reads (names of {@linkcode ENVIRONMENT}). */
  readonly environment: readonly string[];
  /** Its exit codes. */
  readonly exitCodes: readonly ExitCodeSpec[];
}

/** An environment variable some command reads. */
export interface VariableSpec {
  /** The name, or names that go together separated by `, ` (such as `OTEL_DENO, OTEL_*`). */
  readonly name: string;
  /** What it holds. */
  readonly help: string;
}

/** Environment variable holding the caller's bearer. */
export const TOKEN_VARIABLE = "AUTOMATION_RUNTIME_TOKEN";
/** Environment variable holding the service URL. */
export const URL_VARIABLE = "AUTOMATION_RUNTIME_URL";
/** Service URL used when `AUTOMATION_RUNTIME_URL` is unset. */
export const DEFAULT_URL = "http://127.0.0.1:7777";

/** The bootstrap variables, as one row of {@linkcode ENVIRONMENT}. */
const BOOTSTRAP_ENVIRONMENT =
  "AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN, _PRINCIPAL, _CAPABILITIES, _EXPIRES_AT, _AUTHORITY_KEY, " +
  "_GENERATION";

/** Every environment variable a command reads, besides the variables of `serve`'s settings. */
export const ENVIRONMENT: readonly VariableSpec[] = Object.freeze([
  {
    name: TOKEN_VARIABLE,
    help: "the caller's bearer; when unset, the bootstrap bearer from the secret file. Never " +
      "pass a bearer as an argument",
  },
  {
    name: URL_VARIABLE,
    help: `the service URL (default \`${DEFAULT_URL}\`); http or https, without credentials, ` +
      "query or fragment",
  },
  {
    name: SECRET_FILE_VARIABLE,
    help: "the bootstrap secret file (set but empty is an error)",
  },
  {
    name: "XDG_CONFIG_HOME, HOME, APPDATA",
    help: "where the default secret file path is (`<config dir>/automation-runtime/bootstrap.env`)",
  },
  {
    name: BOOTSTRAP_ENVIRONMENT,
    help: "the bootstrap credential in the environment instead of the secret file: the first " +
      "four together, `_AUTHORITY_KEY` and `_GENERATION` as the secret file has them",
  },
  {
    name: `${PROVIDER_VARIABLES.apiKey}, ${PROVIDER_VARIABLES.authToken}`,
    help: "the provider credential that enables runs, never a flag (else the provider file)",
  },
  {
    name: PROVIDER_VARIABLES.webhookSecrets,
    help: "signing secrets of provider webhooks, comma-separated (else the provider file)",
  },
  {
    name: PROVIDER_FILE_VARIABLE,
    help: "the provider file (default `provider.env` beside the bootstrap secret file)",
  },
  {
    name: "OTEL_DENO, OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME",
    help: "traces to an OTLP collector, read by Deno ([observability](observability.md))",
  },
  {
    name: "ACTIONS_ID_TOKEN_REQUEST_URL, ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    help: "set by GitHub Actions for a job with `permissions: id-token: write`: where " +
      "`token exchange --audience` asks for the job's OIDC ID token, and its bearer",
  },
  {
    name: "PG*",
    help: "`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE` and the other `PG*` " +
      "variables: a PostgreSQL store's connection ([PostgreSQL](postgres.md#permission-flags))",
  },
]);

const CLIENT_ENVIRONMENT = [TOKEN_VARIABLE, URL_VARIABLE, SECRET_FILE_VARIABLE] as const;

/** The exit codes of a client command. */
const CLIENT_EXITS: readonly ExitCodeSpec[] = Object.freeze([
  { code: 0, when: "success" },
  {
    code: 1,
    when: "the service refused (its message, status, code and correlation id on stderr) " +
      "or could not be reached",
  },
  { code: 2, when: "usage error" },
]);

const IDEMPOTENCY_KEY: FlagSpec = {
  name: "idempotency-key",
  placeholder: "KEY",
  help: "1 to 128 printable characters; running the same command again with the same key (and " +
    "body) replays the first answer instead of acting twice",
  default: "a fresh random key",
};

const LIMIT: FlagSpec = {
  name: "limit",
  placeholder: "N",
  help: "page size, 1 to 100",
  default: "`20`",
};
const CURSOR: FlagSpec = {
  name: "cursor",
  placeholder: "C",
  help: "the `nextCursor` of the previous page",
};
const ALL: FlagSpec = {
  name: "all",
  help: "every page (`--limit` is then the page size); `nextCursor` is null",
};

/** The commands, in the order of the program's help. */
export const COMMANDS: readonly CommandSpec[] = Object.freeze(
  [
    {
      name: "init",
      positionals: [],
      summary: "Generate the bootstrap credential and write the secret file",
      description: "Generates a bootstrap credential, writes it to the secret file (mode 0600, " +
        "directory 0700) and prints its bearer once on stdout; what it wrote goes to stderr. " +
        "`--rotate` replaces the bootstrap bearer of an existing file and keeps its authority key, " +
        "so every principal issued under it stays valid; `--force` starts over, and every " +
        "principal issued before is revoked.",
      flags: [
        {
          name: "ttl-days",
          placeholder: "N",
          help: "lifetime in days, 1 to 3650 (with `--rotate`: counted from now; without it the " +
            "rotated bearer keeps the old expiry)",
          default: `\`${DEFAULT_TTL_DAYS}\``,
        },
        {
          name: "path",
          placeholder: "FILE",
          help: "the secret file to write",
          default:
            `\`$${SECRET_FILE_VARIABLE}\`, else \`<config dir>/automation-runtime/bootstrap.env\``,
        },
        {
          name: "rotate",
          help: "replace the bearer of the existing secret file; principals issued under it stay " +
            "valid, the old bearer is refused by every replica once one restarts with the new file",
        },
        {
          name: "force",
          help: "replace an existing secret file with a new credential; every principal issued " +
            "before is revoked once the service restarts",
        },
        {
          name: "capabilities",
          placeholder: "LIST",
          help: "comma-separated capabilities of the bootstrap principal",
          default: `\`${
            DEFAULT_BOOTSTRAP_CAPABILITIES.join(",")
          }\` (with \`--rotate\`: the old ones)`,
        },
      ],
      environment: [SECRET_FILE_VARIABLE, "XDG_CONFIG_HOME, HOME, APPDATA"],
      exitCodes: [
        { code: 0, when: "the file was written" },
        {
          code: 1,
          when: "it could not be: an existing file without `--force` or `--rotate`, no file to " +
            "rotate, or an expired one rotated without `--ttl-days`",
        },
        { code: 2, when: "usage error" },
      ],
    },
    {
      name: "serve",
      positionals: [],
      summary: "Run the runtime service",
      description: "Serves the HTTP API until SIGINT or SIGTERM (SIGINT or SIGBREAK on Windows), " +
        "then lets the requests in flight finish. A flag wins over its environment variable, the " +
        "variable over the provider file, and any of them over the default. The bootstrap " +
        "credential comes from the `AUTOMATION_RUNTIME_BOOTSTRAP_*` variables, else the secret " +
        "file, else (loopback binds only) it is generated once. Runs are enabled by a provider " +
        "credential, never a flag: in the environment, else in the provider file (`provider " +
        "init` writes it). Traces: `OTEL_DENO=true` and the standard `OTEL_EXPORTER_OTLP_*` " +
        "variables.",
      flags: [],
      settings: SERVE_SETTINGS,
      environment: [
        BOOTSTRAP_ENVIRONMENT,
        SECRET_FILE_VARIABLE,
        "XDG_CONFIG_HOME, HOME, APPDATA",
        `${PROVIDER_VARIABLES.apiKey}, ${PROVIDER_VARIABLES.authToken}`,
        PROVIDER_VARIABLES.webhookSecrets,
        PROVIDER_FILE_VARIABLE,
        "OTEL_DENO, OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME",
        "PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE and the other PG*",
      ],
      exitCodes: [
        { code: 0, when: "stopped by a signal after a shutdown" },
        {
          code: 1,
          when: "the bootstrap or the provider settings cannot be resolved, the store cannot be " +
            "opened or was claimed by a newer bootstrap, the address is in use, or an invalid " +
            "variable",
        },
        { code: 2, when: "usage error (an unknown or invalid flag)" },
      ],
    },
    {
      name: "demo",
      positionals: [],
      summary: "Try the runs gateway offline: serve with a provider simulator",
      description: "Serves the runtime on 127.0.0.1 with a provider simulator behind it, its " +
        "state (a Deno KV store) in a temporary folder. Nothing of yours is read or written: no " +
        "secret file, provider file or store, no `AUTOMATION_RUNTIME_*` variable (every setting " +
        "keeps its default). Once it listens it prints `export` lines on stdout for " +
        "`AUTOMATION_RUNTIME_URL`, `AUTOMATION_RUNTIME_TOKEN` (the demo's admin bearer, shown " +
        "this once), `AUTOMATION_RUNTIME_DEMO_AGENT_ID` and " +
        "`AUTOMATION_RUNTIME_DEMO_ENVIRONMENT_ID` (a file they are redirected to is made " +
        "private, mode 0600, first) and its guidance on stderr, then serves until SIGINT or " +
        "SIGTERM, lets requests in flight finish and removes the folder. The demo agent, the " +
        "default agent of runs, asks to run a shell command and waits for its confirmation " +
        "(`run pending`, `run approve`), then reports its usage and completes. Try it with " +
        "`npx -y deno@2.9.6 task demo > demo.env &`, then `. ./demo.env`.",
      flags: [
        {
          name: "port",
          placeholder: "P",
          help: "port to bind, 0 to 65535; 0 picks a free one",
          default: "`0`",
        },
        {
          name: "log",
          help: "write the service's JSON log lines to stderr",
          default: "errors only",
        },
      ],
      environment: [],
      exitCodes: [
        { code: 0, when: "stopped by a signal after a shutdown" },
        { code: 1, when: "it cannot start (the port is in use)" },
        { code: 2, when: "usage error" },
      ],
    },
    {
      name: "principal issue",
      positionals: [],
      summary: "Issue a scoped principal (prints its one-time bearer)",
      description: "Issues a scoped principal and prints it as JSON on stdout, with its one-time " +
        "bearer (a reminder goes to stderr).",
      flags: [
        {
          name: "capabilities",
          placeholder: "LIST",
          required: true,
          help: `comma-separated: ${
            CAPABILITIES.filter((c) => c !== "authority:admin").join(", ")
          }`,
        },
        {
          name: "ttl-days",
          placeholder: "N",
          help: "lifetime in days, 1 to 90",
          default: `\`${DEFAULT_PRINCIPAL_TTL_DAYS}\``,
        },
        {
          name: "expires-at",
          placeholder: "TIME",
          help: "an RFC 3339 expiry instead of `--ttl-days` (not both)",
        },
        {
          name: "principal-id",
          placeholder: "UUID",
          help: "a lower-case UUID",
          default: "a random one",
        },
        {
          name: "name",
          placeholder: "NAME",
          help: "a name for people, such as the CI job it is for: 1 to 64 printable characters",
        },
        {
          name: "metadata",
          placeholder: "PAIRS",
          help:
            "up to 16 string pairs: `key=value,key=value`, or a JSON object of strings; keys 1 " +
            "to 64 characters, values at most 512",
        },
        IDEMPOTENCY_KEY,
        {
          name: "agent-ids",
          placeholder: "LIST",
          help: "comma-separated agent ids (1 to 32) it may start runs on",
          default: "any agent the issuer may use",
        },
        {
          name: "environment-ids",
          placeholder: "LIST",
          help: "comma-separated environment ids (1 to 32) its runs may run in",
          default: "any environment the issuer may use",
        },
        {
          name: "vault-ids",
          placeholder: "LIST",
          help: "comma-separated vault ids (1 to 32) its runs may attach",
          default: "none",
        },
        {
          name: "memory-store-ids",
          placeholder: "LIST",
          help: "comma-separated memory store ids (1 to 32) its runs may mount",
          default: "none",
        },
        {
          name: "repositories",
          placeholder: "LIST",
          help: "comma-separated GitHub repositories as `owner/name` (1 to 32) its runs may mount",
          default: "none",
        },
        {
          name: "file-ids",
          placeholder: "LIST",
          help: "comma-separated file ids (1 to 32) its runs may mount",
          default: "none",
        },
        {
          name: "max-active-runs",
          placeholder: "N",
          help: "runs it may have active at once, 1 to 100",
          default: "the service's, `8`",
        },
        {
          name: "allow-agent-overrides",
          help: "its runs may override the agent's model, system prompt, tools, MCP servers or " +
            "skills (through the provider's API; only when the issuer may)",
          default: "not allowed",
        },
        {
          name: "budget",
          placeholder: "CENTS",
          help: "the most its runs may spend together (list cost) in each `--budget-period`, in " +
            "minor units of USD: `5000` is $50.00",
          default: "the issuer's (none for the bootstrap)",
        },
        {
          name: "budget-period",
          placeholder: "P",
          help: `the budget's period: ${BUDGET_PERIODS.join(", ")} (UTC days and months)`,
          default: "`total`",
        },
        {
          name: "max-run-cost",
          placeholder: "CENTS",
          help: "the most one of its runs may spend, in minor units of USD",
          default: "the issuer's (none for the bootstrap)",
        },
        {
          name: "max-run-seconds",
          placeholder: "N",
          help: "the longest one of its runs may stay active at a stretch, 1 to 604800 seconds; " +
            "the runtime interrupts it then",
          default: "the issuer's (none for the bootstrap)",
        },
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "principal revoke",
      positionals: ["ID"],
      summary: "Revoke a principal",
      description: "Revokes the principal `ID` (a lower-case UUID): its bearer stops working at " +
        "once, on every replica. Revoking it again succeeds again; an unknown id exits 1 with " +
        "`notFound`.",
      flags: [IDEMPOTENCY_KEY],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "principal list",
      positionals: [],
      summary: "List principals, with their names",
      description: "Prints every principal as JSON on stdout, oldest first, with its name and " +
        "metadata when it has them; never a bearer.",
      flags: [],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "provider init",
      positionals: [],
      summary: "Store the provider API key (read from stdin) and settings for serve",
      description: "Reads the provider API key from standard input (typed without echo on a " +
        "terminal, or piped) and writes it, with the settings given, to the provider file (mode " +
        "0600, directory 0700) that `serve` reads. The key is never printed. Restart the service " +
        "afterwards.",
      flags: [
        {
          name: "base-url",
          placeholder: "URL",
          help: "the provider's base URL, http(s); `serve` needs one with a credential",
        },
        {
          name: "default-agent",
          placeholder: "ID",
          help: "agent of runs that name none",
        },
        {
          name: "default-environment",
          placeholder: "ID",
          help: "environment of runs that name none",
        },
        {
          name: "path",
          placeholder: "FILE",
          help: "the provider file to write",
          default: `\`$${PROVIDER_FILE_VARIABLE}\`, else \`provider.env\` beside the secret file`,
        },
        { name: "force", help: "replace an existing provider file" },
        {
          name: "auth-token",
          help: `the input is a provider bearer token (\`${PROVIDER_VARIABLES.authToken}\`), not ` +
            `an API key (\`${PROVIDER_VARIABLES.apiKey}\`)`,
        },
      ],
      environment: [PROVIDER_FILE_VARIABLE, SECRET_FILE_VARIABLE, "XDG_CONFIG_HOME, HOME, APPDATA"],
      exitCodes: [
        { code: 0, when: "the file was written" },
        {
          code: 1,
          when:
            "it could not be: an existing file without `--force`, no or an invalid credential " +
            "on standard input",
        },
        { code: 2, when: "usage error" },
      ],
    },
    {
      name: "run start",
      positionals: [],
      summary: "Start a run of an agent (message from --message or stdin)",
      description: "Starts a run and prints its record as JSON. The message comes from " +
        "`--message`, else from standard input (piped). `--agent` and `--environment` default to " +
        "the service's defaults.",
      flags: [
        { name: "agent", placeholder: "ID", help: "the agent", default: "the service's" },
        {
          name: "environment",
          placeholder: "ID",
          help: "the environment",
          default: "the service's",
        },
        { name: "title", placeholder: "T", help: "a title" },
        { name: "message", placeholder: "TEXT", help: "the first message", default: "stdin" },
        IDEMPOTENCY_KEY,
        {
          name: "follow",
          help: "print the record on one line, then watch the new run (as `run watch`)",
        },
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: [
        ...CLIENT_EXITS.slice(0, 1),
        {
          code: 1,
          when: "the service refused or could not be reached; with `--follow`: the run failed or " +
            "was cancelled",
        },
        ...CLIENT_EXITS.slice(2),
      ],
    },
    {
      name: "run list",
      positionals: [],
      summary: "List runs, newest first",
      description: 'Prints one page of runs, newest first: `{"runs": [...], "nextCursor": ...}`.',
      flags: [
        {
          name: "state",
          placeholder: "S",
          help: `only runs in this state: ${RUN_STATES.join(", ")}`,
        },
        LIMIT,
        {
          name: "principal",
          placeholder: "ID",
          help: "another principal's runs (admins and approvers)",
        },
        CURSOR,
        ALL,
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "run get",
      positionals: ["ID"],
      summary: "Show a run",
      description: "Prints the record of the run `ID`.",
      flags: [],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "run send",
      positionals: ["ID"],
      summary: "Send a follow-up message to a run",
      description: "Sends a follow-up message (from `--message`, else standard input) and prints " +
        "the record.",
      flags: [
        { name: "message", placeholder: "TEXT", help: "the message", default: "stdin" },
        IDEMPOTENCY_KEY,
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "run cancel",
      positionals: ["ID"],
      summary: "Cancel a run",
      description: "Asks the provider to stop the run and prints the record; it becomes " +
        "`cancelled`.",
      flags: [IDEMPOTENCY_KEY],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "run watch",
      positionals: ["ID"],
      summary: "Print a run's events as they come (exit 0: completed)",
      description: "Prints the run's events, one JSON object a line (`{seq, at, type, runId, " +
        "...}`), until the turn ends; reconnects and resumes by itself.",
      flags: [
        {
          name: "after",
          placeholder: "N",
          help: "start after this seq",
          default: "`0`",
        },
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: [
        { code: 0, when: "the run completed" },
        { code: 1, when: "it failed or was cancelled, or the service refused" },
        { code: 2, when: "usage error" },
      ],
    },
    {
      name: "run pending",
      positionals: ["[ID]"],
      summary: "List tool requests waiting: a run's, or every run's (the inbox)",
      description: "With a run ID, prints that run's tool requests waiting for an answer: " +
        '`{"pending": [...]}`. Without one, prints the inbox, every request waiting in the runs ' +
        "you may read (approvers and admins: every run), each with its run's title, agent and " +
        "owner and `deniedAt`, and the `activitySeq` to follow the feed from. `--follow` (no ID) " +
        "prints the inbox on one line, then each change of the activity feed (a run created or " +
        "changing state, a request pending or answered) a JSON object a line, until interrupted.",
      flags: [
        {
          name: "follow",
          help: "without an ID: print the inbox, then follow the activity feed from it",
        },
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: [
        ...CLIENT_EXITS.slice(0, 1),
        {
          code: 1,
          when: "the service refused or could not be reached; with `--follow`: the feed was " +
            "refused (a revoked or expired principal)",
        },
        ...CLIENT_EXITS.slice(2),
      ],
    },
    {
      name: "run approve",
      positionals: ["ID", "TOOL_USE_ID"],
      summary: "Allow or deny a paused tool call (session:approve)",
      description: "Allows (`--allow`) or denies (`--deny`, with an optional `--message` for the " +
        "agent) a paused tool call; needs `session:approve`. Exactly one answer counts: a second " +
        "one fails with `alreadyAnswered`, naming who answered.",
      flags: [
        { name: "allow", help: "allow the call (give exactly one of `--allow` and `--deny`)" },
        { name: "deny", help: "deny the call" },
        { name: "message", placeholder: "M", help: "with `--deny`: why, for the agent" },
        IDEMPOTENCY_KEY,
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "run respond",
      positionals: ["ID", "TOOL_USE_ID"],
      summary: "Send a custom tool's result (JSON content blocks on stdin)",
      description: "Sends a custom tool's result to a run of yours: a JSON array of content " +
        'blocks on standard input, such as `[{"type": "text", "text": "42"}]`.',
      flags: [
        { name: "error", help: "mark the result a failure" },
        IDEMPOTENCY_KEY,
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "audit list",
      positionals: [],
      summary: "List audit log entries (authority:admin)",
      description: 'Prints one page of the audit log: `{"entries": [...], "nextCursor": ...}`.',
      flags: [
        {
          name: "principal",
          placeholder: "ID",
          help: "entries whose actor or subject is this principal",
        },
        {
          name: "action",
          placeholder: "A",
          help: `one of ${AUDIT_ACTIONS.join(", ")}`,
        },
        LIMIT,
        CURSOR,
        ALL,
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "token exchange",
      positionals: [],
      summary: "Trade a CI job's OIDC ID token for a short-lived principal",
      description: "Exchanges the job's OIDC ID token for a principal under the trust policy " +
        "named by `--policy` (the exchange needs no bearer: the token is the credential) and " +
        "prints one line on stdout for the job's shell to evaluate, which sets " +
        "`AUTOMATION_RUNTIME_TOKEN` to the principal's bearer. The principal's id and expiry go " +
        "to stderr. The ID token comes from `--token-file`, from GitHub Actions (`--audience`), " +
        "or else from standard input; never from an argument, which the process list shows. " +
        "See [CI with no stored secret](ci.md).",
      flags: [
        {
          name: "policy",
          placeholder: "NAME",
          help: "the trust policy to exchange under",
          required: true,
        },
        { name: "token-file", placeholder: "FILE", help: "read the ID token from FILE" },
        {
          name: "audience",
          placeholder: "AUD",
          help: "in GitHub Actions: ask for an ID token for AUD (the policy's audience) with " +
            "`ACTIONS_ID_TOKEN_REQUEST_URL` and `ACTIONS_ID_TOKEN_REQUEST_TOKEN`",
        },
        IDEMPOTENCY_KEY,
      ],
      environment: [URL_VARIABLE, "ACTIONS_ID_TOKEN_REQUEST_URL, ACTIONS_ID_TOKEN_REQUEST_TOKEN"],
      exitCodes: [
        { code: 0, when: "exchanged: the export line is on stdout" },
        {
          code: 1,
          when: "no ID token could be had, or the service refused it (its reason on stderr)",
        },
        { code: 2, when: "usage error" },
      ],
    },
    {
      name: "usage",
      positionals: [],
      summary: "Tokens and list cost, by principal, agent or day",
      description: "Prints the tokens and list cost settled in `[--from, --to)` as JSON, summed " +
        'by principal, agent or UTC day: `{"from", "to", "groupBy", "groups": [...], "total"}`, ' +
        'amounts in minor units of USD (`"2500"` is $25.00). Admins see every principal\'s ' +
        "usage; everyone else their own.",
      flags: [
        {
          name: "from",
          placeholder: "TIME",
          help: "RFC 3339 start, inclusive",
          default: "the start of the current UTC month",
        },
        { name: "to", placeholder: "TIME", help: "RFC 3339 end, exclusive", default: "now" },
        {
          name: "group-by",
          placeholder: "G",
          help: `one of ${USAGE_GROUPS.join(", ")}`,
          default: "`principal`",
        },
        {
          name: "principal",
          placeholder: "ID",
          help: "only this principal's usage (admins; others may name only themselves)",
        },
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: CLIENT_EXITS,
    },
    {
      name: "call",
      positionals: ["METHOD", "PATH"],
      summary: "Send one request to the API with the shared headers; print the answer",
      description: "Sends `METHOD PATH` (`GET`, `POST` or `DELETE`; the path with its query, " +
        "such as `/v1/runs?limit=5`) with the bearer, the interface version, a fresh correlation " +
        "id, a deadline (on the service's clock) and, on a `POST`, an idempotency key, retried as " +
        "the SDK retries. Prints the answer's JSON body on stdout (nothing for an empty one), the " +
        "error body of a refusal included, and a refusal's one line on stderr.",
      flags: [
        {
          name: "data",
          placeholder: "JSON",
          help: "the JSON body; `@FILE` reads it from a file, `@-` from standard input",
        },
        IDEMPOTENCY_KEY,
      ],
      environment: CLIENT_ENVIRONMENT,
      exitCodes: [
        { code: 0, when: "a 2xx answer" },
        { code: 1, when: "any other answer (its body still printed), or no answer" },
        {
          code: 2,
          when: "usage error (an unknown method, a path without `/`, a body that is not JSON)",
        },
      ],
    },
  ] satisfies CommandSpec[],
);

/**
 * The command named `name`, or a `RangeError`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { commandSpec } from "./command_table.ts";
 * assert.deepEqual(commandSpec("principal revoke").positionals, ["ID"]);
 * ```
 */
export function commandSpec(name: string): CommandSpec {
  const spec = COMMANDS.find((command) => command.name === name);
  if (spec === undefined) throw new RangeError(`No command ${name}`);
  return spec;
}

/**
 * The flags of a command: its own, or those of its settings table.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { commandFlags, commandSpec } from "./command_table.ts";
 * assert.ok(commandFlags(commandSpec("serve")).some((flag) => flag.name === "port"));
 * ```
 */
export function commandFlags(spec: CommandSpec): readonly FlagSpec[] {
  if (spec.settings === undefined) return spec.flags;
  return Object.values(spec.settings).flatMap((setting) =>
    setting.flag === undefined ? [] : [{
      name: setting.flag,
      placeholder: setting.placeholder,
      help: setting.parser.accepts === undefined
        ? setting.help
        : `${setting.help}; ${setting.parser.accepts}`,
      default: setting.defaultText,
    }]
  );
}

/**
 * The synopsis of a command: its name, positionals and flags (`[--flag P]` when optional).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { commandSpec, synopsis } from "./command_table.ts";
 * assert.equal(
 *   synopsis(commandSpec("principal revoke")),
 *   "automation-runtime principal revoke ID [--idempotency-key KEY]",
 * );
 * ```
 */
export function synopsis(spec: CommandSpec): string {
  const flags = commandFlags(spec).map((flag) => {
    const text = flag.placeholder === undefined
      ? `--${flag.name}`
      : `--${flag.name} ${flag.placeholder}`;
    return flag.required ? text : `[${text}]`;
  });
  return [PROGRAM, spec.name, ...spec.positionals, ...flags].join(" ");
}
