/**
 * A delivery's POST, sent to the address the target check passed (`targets.ts`) and to no other.
 *
 * `fetch` resolves the target's name again when it connects, and a name can answer differently
 * the second time (DNS rebinding: public for the check, loopback or a metadata address for the
 * connection; or another resolver's answer, such as a search domain or `/etc/hosts`). So the
 * attempt opens its TCP connection to the checked address itself (`Deno.connect`), starts TLS on
 * it for `https` with the URL's host name (SNI, and the certificate verified against that name as
 * `fetch` would, `Deno.startTls`), and writes one HTTP/1.1 request: the URL's path and query,
 * `Host` as in the URL, the headers, `content-length`, `connection: close`, the body. It reads the
 * answer's status line and nothing more (1xx answers skipped), then closes the connection:
 * redirects are not followed, like `fetch` with `redirect: "manual"`.
 *
 * Why not a library: `fetch` has no way to connect to a given address while verifying TLS for the
 * name, and `node:https` (whose `lookup` option would pin it) asks for `--allow-sys` in Deno. A
 * request line, a few headers and a status line are all a delivery needs.
 *
 * Failures: a connection that cannot be opened, TLS that does not verify, or an answer that is no
 * HTTP/1.x status line throw a `TypeError` (`connection failed`); `signal` firing (the attempt's
 * timeout) throws its reason and closes what was opened.
 *
 * @module
 */

/** Most bytes of the answer read while looking for its status line and headers. */
const MAX_HEAD_BYTES = 16_384;
const ENCODER = new TextEncoder();
const DECODER = new TextDecoder();

/** Options of {@linkcode postPinned}. */
export interface PinnedPostOptions {
  /** The target (`http:` or `https:`). */
  url: URL;
  /** The checked addresses the name resolved to, tried in order until one connects. */
  addresses: readonly string[];
  /** The request headers (besides `host`, `content-length` and `connection`). */
  headers: Readonly<Record<string, string>>;
  /** The body. */
  body: string;
  /** Ends the attempt (its timeout). */
  signal: AbortSignal;
  /** Root certificates to trust besides Deno's (tests). */
  caCerts?: string[];
}

/**
 * POSTs `body` to `url` over a connection to one of `addresses`; answers the status.
 *
 * @example
 * ```ts ignore
 * const status = await postPinned({
 *   url: new URL("https://hooks.example.com/x"),
 *   addresses: ["93.184.215.14"],
 *   headers: { "content-type": "application/json" },
 *   body: "{}",
 *   signal: AbortSignal.timeout(10_000),
 * });
 * ```
 */
export async function postPinned(options: PinnedPostOptions): Promise<number> {
  const { url, signal } = options;
  signal.throwIfAborted();
  // What is open now: the abort closes it, and a step that ends after the abort closes its own.
  let open: Deno.Conn | null = null;
  const hold = <C extends Deno.Conn>(conn: C): C => {
    open = conn;
    if (signal.aborted) close(conn);
    return conn;
  };
  const abort = () => {
    if (open !== null) close(open);
  };
  signal.addEventListener("abort", abort, { once: true });
  const exchange = async (): Promise<number> => {
    const tcp = hold(await connect(url, options.addresses));
    let conn: Deno.Conn = tcp;
    if (url.protocol === "https:") {
      conn = hold(
        await Deno.startTls(tcp, {
          hostname: url.hostname,
          ...(options.caCerts !== undefined ? { caCerts: options.caCerts } : {}),
        }),
      );
    }
    await writeAll(conn, requestBytes(url, options.headers, options.body));
    return await readStatus(conn);
  };
  let stop = () => {};
  const stopped = new Promise<never>((_, reject) => {
    stop = () => reject(signal.reason);
    signal.addEventListener("abort", stop, { once: true });
  });
  try {
    return await Promise.race([exchange(), stopped]);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (error instanceof TypeError) throw error;
    throw new TypeError("connection failed", { cause: error });
  } finally {
    signal.removeEventListener("abort", abort);
    signal.removeEventListener("abort", stop);
    if (open !== null) close(open);
  }
}

function close(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Closed already.
  }
}

/** A TCP connection to the first of `addresses` that accepts one, on the URL's port. */
async function connect(url: URL, addresses: readonly string[]): Promise<Deno.TcpConn> {
  const port = url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  let last: unknown = new Error("no address");
  for (const address of addresses) {
    try {
      return await Deno.connect({ hostname: address, port });
    } catch (error) {
      last = error;
    }
  }
  throw new TypeError("connection failed", { cause: last });
}

/** The request's bytes: request line, headers, an empty line, the body. */
function requestBytes(
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: string,
): Uint8Array {
  const payload = ENCODER.encode(body);
  const lines = [`POST ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`];
  for (const [name, value] of Object.entries(headers)) {
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) throw new TypeError("invalid header");
    lines.push(`${name}: ${value}`);
  }
  lines.push(`content-length: ${payload.byteLength}`, "connection: close", "", "");
  const head = ENCODER.encode(lines.join("\r\n"));
  const bytes = new Uint8Array(head.byteLength + payload.byteLength);
  bytes.set(head);
  bytes.set(payload, head.byteLength);
  return bytes;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.byteLength) offset += await conn.write(bytes.subarray(offset));
}

/** The status of the first final (non-1xx) answer, from at most {@linkcode MAX_HEAD_BYTES}. */
async function readStatus(conn: Deno.Conn): Promise<number> {
  const buffer = new Uint8Array(MAX_HEAD_BYTES);
  let length = 0;
  let start = 0;
  for (;;) {
    const text = DECODER.decode(buffer.subarray(start, length));
    const status = /^HTTP\/1\.[01] ([1-5][0-9]{2})(?: [^\r\n]*)?\r\n/.exec(text);
    if (status !== null) {
      const code = Number(status[1]);
      if (code >= 200) return code;
      // An interim answer (100, 103): skip its header block, read the final one.
      const end = text.indexOf("\r\n\r\n");
      if (end !== -1) {
        start += ENCODER.encode(text.slice(0, end + 4)).byteLength;
        continue;
      }
    } else if (length - start >= 12 && !/^HTTP\/1\.[01] /.test(text)) {
      throw new TypeError("not an HTTP/1.x answer");
    }
    if (length === buffer.byteLength) throw new TypeError("the answer's head is too long");
    const read = await conn.read(buffer.subarray(length));
    if (read === null) throw new TypeError("the connection closed before an answer");
    length += read;
  }
}
