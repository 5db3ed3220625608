/**
 * A recording HTTP server for wire-conformance tests (see docs/library.md): it keeps, for
 * every request, the method, path, raw and decoded query, lower-cased headers and the raw body
 * (parsed when JSON), and answers with canned JSON shaped like the provider's records: cursor
 * pages (`{data, next_page: null}`, sessions adding `prev_page`), `*_deleted` objects for deletes,
 * the recorded events for event sends, and `text/event-stream` frames for stream paths. A test can
 * queue scripted answers with {@linkcode Recorder.respondNext}.
 *
 * @module
 */

/** One recorded request. */
export interface RecordedRequest {
  /** HTTP method. */
  method: string;
  /** Path without the query. */
  path: string;
  /** Raw query string without `?`. */
  rawQuery: string;
  /** Decoded query pairs in order. */
  query: [string, string][];
  /** Headers with lower-case names. */
  headers: Record<string, string>;
  /** The raw body text (empty when none). */
  bodyText: string;
  /** The parsed body when it was JSON. */
  json?: unknown;
}

/** Collection names that end a list path. */
const LIST_SEGMENTS = new Set([
  "agents",
  "environments",
  "sessions",
  "memory_stores",
  "vaults",
  "deployments",
  "deployment_runs",
  "versions",
  "resources",
  "events",
  "threads",
  "memories",
  "memory_versions",
  "credentials",
  "work",
]);

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "request-id": "req_recorded", ...headers },
  });
}

/** The canned answer for a request the test did not script. */
function cannedAnswer(request: RecordedRequest): Response {
  const segments = request.path.split("/").filter((s) => s !== "");
  const last = segments.at(-1) ?? "";
  if (last === "stream") {
    const frame = { type: "session.status_idle", id: "sevt_1", stop_reason: { type: "end_turn" } };
    return new Response(`event: ${frame.type}\ndata: ${JSON.stringify(frame)}\n\n`, {
      headers: { "content-type": "text/event-stream", "request-id": "req_recorded" },
    });
  }
  if (request.method === "DELETE") {
    const kind = segments.at(-2)?.replace(/s$/, "") ?? "resource";
    return json({ id: last, type: `${kind}_deleted` });
  }
  if (request.method === "POST" && last === "events") {
    const events = (request.json as { events?: Record<string, unknown>[] })?.events ?? [];
    return json({
      data: events.map((e, i) => ({ ...e, id: `sevt_${i + 1}`, processed_at: null })),
    });
  }
  if (request.method === "GET" && LIST_SEGMENTS.has(last)) {
    const page: Record<string, unknown> = { data: [], next_page: null };
    if (request.path === "/v1/sessions") page.prev_page = null;
    return json(page);
  }
  if (last === "stats") {
    return json({
      type: "work_queue_stats",
      depth: 0,
      pending: 0,
      oldest_queued_at: null,
      workers_polling: null,
    });
  }
  if (last === "mcp_oauth_validate") {
    return json({ type: "vault_credential_validation", status: "valid" });
  }
  return json({ id: segments[2] ?? "rec_1", type: "record" });
}

/** The recording server. */
export class Recorder {
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #records: RecordedRequest[] = [];
  readonly #scripted: ((request: RecordedRequest) => Response)[] = [];

  private constructor(server: Deno.HttpServer<Deno.NetAddr>) {
    this.#server = server;
    this.baseUrl = `http://127.0.0.1:${server.addr.port}`;
  }

  /** Starts a recorder on a random port; stop it with {@linkcode Recorder.close}. */
  static start(): Recorder {
    const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request): Promise<Response> => recorder.#handle(request),
    );
    const recorder: Recorder = new Recorder(server);
    return recorder;
  }

  /** Answers the next request with `answer` instead of the canned response. */
  respondNext(answer: (request: RecordedRequest) => Response): void {
    this.#scripted.push(answer);
  }

  /** Returns the requests recorded so far and forgets them. */
  take(): RecordedRequest[] {
    return this.#records.splice(0, this.#records.length);
  }

  /** Stops the server. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }

  async #handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const bodyText = request.body ? await request.text() : "";
    const headers: Record<string, string> = {};
    for (const [name, value] of request.headers) headers[name.toLowerCase()] = value;
    const record: RecordedRequest = {
      method: request.method,
      path: url.pathname,
      rawQuery: url.search.slice(1),
      query: [...url.searchParams.entries()],
      headers,
      bodyText,
    };
    if (bodyText !== "" && (headers["content-type"] ?? "").includes("application/json")) {
      try {
        record.json = JSON.parse(bodyText);
      } catch {
        // Kept as text only.
      }
    }
    this.#records.push(record);
    const scripted = this.#scripted.shift();
    return scripted ? scripted(record) : cannedAnswer(record);
  }
}
