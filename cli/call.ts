/**
 * `automation-runtime call METHOD PATH [--data JSON | --data @FILE | --data @-]`: one request to
 * the service's API through the SDK's request path (`RuntimeServiceClient.request`), so it sends
 * what every SDK call sends (the bearer, the interface version, a fresh correlation id, a
 * deadline on the service's clock, an idempotency key on a `POST`) and gets the SDK's retries and
 * clock correction. The answer's JSON body goes to stdout, the error body of a refusal included;
 * a refusal is also one line on stderr. Exit 0 on a 2xx answer, 1 otherwise.
 *
 * @module
 */
import { REQUEST_METHODS, type RuntimeRequest, RuntimeServiceError } from "../sdk/mod.ts";
import { parseArgs, UsageError } from "./_args.ts";
import { clientFromEnvironment, describeServiceError, idempotencyKeyFlag } from "./_client.ts";
import { argSpecOf, commandHelp } from "./_help.ts";
import { printOut, PROGRAM, reportError } from "./_output.ts";
import { readStdinText } from "./_stdin.ts";

/** Largest body read from a file or standard input: the service's default body limit. */
const MAX_DATA_BYTES = 1024 * 1024;

/**
 * Runs `call` with the arguments after the word `call` and returns the exit code: 0 on a 2xx
 * answer, 1 on any other answer or none, 2 on a usage error.
 *
 * @example
 * ```ts ignore
 * import { callCommand } from "./call.ts";
 * Deno.exit(await callCommand(["GET", "/v1/runtime"]));
 * ```
 */
export async function callCommand(args: string[]): Promise<number> {
  try {
    const parsed = parseArgs(args, argSpecOf("call"));
    if (parsed.help) {
      printOut(commandHelp("call"));
      return 0;
    }
    const [methodText, path] = parsed.positionals;
    if (methodText === undefined || path === undefined) {
      throw new UsageError("call", "Give the METHOD and the PATH, such as: call GET /v1/runtime");
    }
    const method = methodText.toUpperCase();
    if (!(REQUEST_METHODS as readonly string[]).includes(method)) {
      throw new UsageError("call", `METHOD must be one of ${REQUEST_METHODS.join(", ")}`);
    }
    if (!/^\/[\x21-\x7e]*$/.test(path) || path.length > 8192) {
      throw new UsageError(
        "call",
        "PATH must start with / and hold printable characters without spaces (encode them)",
      );
    }
    const idempotencyKey = idempotencyKeyFlag("call", parsed.strings.get("idempotency-key"));
    const data = parsed.strings.get("data");
    const request: RuntimeRequest = {
      method: method as RuntimeRequest["method"],
      path,
      ...(data === undefined ? {} : { body: await bodyOf(data) }),
    };
    if (request.body !== undefined && method !== "POST") {
      throw new UsageError("call", "--data goes with POST");
    }
    const client = await clientFromEnvironment();
    const answer = await client.request(request, { idempotencyKey });
    if (answer.body !== null) printOut(JSON.stringify(answer.body, null, 2));
    if (answer.status >= 200 && answer.status < 300) return 0;
    return reportError(describeServiceError(RuntimeServiceError.fromAnswer(answer)));
  } catch (error) {
    return reportError(error instanceof RuntimeServiceError ? describeServiceError(error) : error);
  }
}

/** The JSON body of `--data`: the text itself, `@FILE` or `@-` (standard input). */
async function bodyOf(data: string): Promise<unknown> {
  let text = data;
  let origin = "--data";
  if (data === "@-") {
    if (Deno.stdin.isTerminal()) {
      throw new UsageError("call", "--data @- reads standard input: pipe the JSON body in");
    }
    text = await readStdinText(MAX_DATA_BYTES);
    origin = "Standard input";
  } else if (data.startsWith("@")) {
    const file = data.slice(1);
    origin = `The file ${file}`;
    try {
      const info = await Deno.stat(file);
      if (!info.isFile) throw new Error("not a regular file");
      if (info.size > MAX_DATA_BYTES) throw new Error(`larger than ${MAX_DATA_BYTES} bytes`);
      text = await Deno.readTextFile(file);
    } catch (error) {
      throw new Error(`Cannot read ${file} for --data: ${(error as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(
      "call",
      `${origin} is not JSON (to send a file, write --data @FILE; see \`${PROGRAM} call --help\`)`,
    );
  }
}
