/**
 * A minimal HTTP/1.1 client over a raw TCP connection, for requests `fetch` refuses to send:
 * control characters in header values, the same header twice, odd methods, bodies trickled one
 * byte at a time. It keeps the connection alive between requests and decodes `content-length`
 * and chunked responses.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One response as read off the wire. */
export interface RawResponse {
  /** Status code. */
  status: number;
  /** Header fields, names in lower case, in arrival order. */
  headers: [string, string][];
  /** The body bytes (decoded from chunked when needed). */
  body: Uint8Array;
  /** Whether the server will close (or closed) the connection after this response. */
  closes: boolean;
}

/**
 * The first value of a header in a raw response, or null.
 *
 * @example
 * ```ts
 * import { headerOf } from "./_raw_http.ts";
 * console.log(headerOf({ status: 200, headers: [["a", "1"]], body: new Uint8Array(), closes: false }, "a")); // "1"
 * ```
 */
export function headerOf(response: RawResponse, name: string): string | null {
  return response.headers.find(([key]) => key === name)?.[1] ?? null;
}

/**
 * The body as text.
 *
 * @example
 * ```ts
 * import { bodyText } from "./_raw_http.ts";
 * const body = new TextEncoder().encode("{}");
 * console.log(bodyText({ status: 200, headers: [], body, closes: false })); // "{}"
 * ```
 */
export function bodyText(response: RawResponse): string {
  return decoder.decode(response.body);
}

/** Raised when the server closed or reset the connection before a whole response arrived. */
export class ConnectionLostError extends Error {
  /** Stable code. */
  readonly code = "connectionLost" as const;
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ConnectionLostError } from "./_raw_http.ts";
   * assert.equal(new ConnectionLostError("closed before the response").code, "connectionLost");
   * ```
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ConnectionLostError";
  }
}

function indexOfCrlfCrlf(bytes: Uint8Array, from: number): number {
  for (let i = Math.max(0, from); i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}

function indexOfCrlf(bytes: Uint8Array, from: number): number {
  for (let i = from; i + 1 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10) return i;
  }
  return -1;
}

/**
 * One keep-alive connection. Requests on it run one after another.
 *
 * @example
 * ```ts ignore
 * import { RawConnection } from "./_raw_http.ts";
 * const connection = await RawConnection.open(8000);
 * const response = await connection.request("GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
 * connection.close();
 * ```
 */
export class RawConnection {
  /** The socket. */
  readonly conn: Deno.TcpConn;
  #buffer: Uint8Array = new Uint8Array(0);
  #closed = false;
  #readChunk = new Uint8Array(64 * 1024);

  private constructor(conn: Deno.TcpConn) {
    this.conn = conn;
  }

  /**
   * Connects to 127.0.0.1 on `port`.
   *
   * @example
   * ```ts ignore
   * import { RawConnection } from "./_raw_http.ts";
   * const connection = await RawConnection.open(8000);
   * ```
   */
  static async open(port: number): Promise<RawConnection> {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.setNoDelay(true);
    return new RawConnection(conn);
  }

  /** Whether the connection is closed (by either side). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Closes the socket; safe to call twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.conn.close();
    } catch {
      // Already closed.
    }
  }

  /**
   * Writes bytes; resolves false when the peer no longer accepts them (reset or closed).
   *
   * @example
   * ```ts ignore
   * await connection.write(new TextEncoder().encode("x"));
   * ```
   */
  async write(data: Uint8Array | string): Promise<boolean> {
    const bytes = typeof data === "string" ? encoder.encode(data) : data;
    try {
      let written = 0;
      while (written < bytes.length) written += await this.conn.write(bytes.subarray(written));
      return true;
    } catch {
      return false;
    }
  }

  async #fill(): Promise<boolean> {
    let count: number | null;
    try {
      count = await this.conn.read(this.#readChunk);
    } catch (error) {
      if (this.#buffer.length === 0) {
        throw new ConnectionLostError("Connection reset", { cause: error });
      }
      count = null;
    }
    if (count === null) return false;
    const next = new Uint8Array(this.#buffer.length + count);
    next.set(this.#buffer);
    next.set(this.#readChunk.subarray(0, count), this.#buffer.length);
    this.#buffer = next;
    return true;
  }

  async #need(length: number): Promise<void> {
    while (this.#buffer.length < length) {
      if (!(await this.#fill())) throw new ConnectionLostError("Connection closed mid-response");
    }
  }

  #take(length: number): Uint8Array {
    const out = this.#buffer.slice(0, length);
    this.#buffer = this.#buffer.subarray(length);
    return out;
  }

  async #line(): Promise<string> {
    let end = indexOfCrlf(this.#buffer, 0);
    while (end === -1) {
      if (!(await this.#fill())) throw new ConnectionLostError("Connection closed mid-response");
      end = indexOfCrlf(this.#buffer, 0);
    }
    const line = decoder.decode(this.#buffer.subarray(0, end));
    this.#buffer = this.#buffer.subarray(end + 2);
    return line;
  }

  /**
   * Reads one response. `head` means the request was a `HEAD` (no body follows); a response
   * with status 200 and `text/event-stream` is returned after its headers, and the connection
   * closed, since such a stream does not end by itself.
   *
   * @example
   * ```ts ignore
   * const response = await connection.readResponse();
   * ```
   */
  async readResponse(options: { head?: boolean } = {}): Promise<RawResponse> {
    let end = indexOfCrlfCrlf(this.#buffer, 0);
    while (end === -1) {
      const scanned = this.#buffer.length;
      if (!(await this.#fill())) {
        this.close();
        throw new ConnectionLostError("Connection closed before a response");
      }
      end = indexOfCrlfCrlf(this.#buffer, scanned - 3);
    }
    const head = decoder.decode(this.#buffer.subarray(0, end)).split("\r\n");
    this.#buffer = this.#buffer.subarray(end + 4);
    const statusLine = /^HTTP\/1\.[01] (\d{3})/.exec(head[0]);
    if (!statusLine) throw new Error(`Not an HTTP response: ${JSON.stringify(head[0])}`);
    const status = Number(statusLine[1]);
    const headers: [string, string][] = head.slice(1).map((line) => {
      const colon = line.indexOf(":");
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
    });
    const get = (name: string) => headers.find(([key]) => key === name)?.[1] ?? null;
    let closes = get("connection")?.toLowerCase() === "close" || head[0].startsWith("HTTP/1.0");
    let body: Uint8Array = new Uint8Array(0);
    const noBody = options.head || status === 204 || status === 304 || status < 200;
    if (status === 200 && get("content-type")?.startsWith("text/event-stream")) {
      this.close();
      return { status, headers, body, closes: true };
    }
    if (!noBody) {
      if (get("transfer-encoding")?.toLowerCase().includes("chunked")) {
        const parts: Uint8Array[] = [];
        while (true) {
          const size = parseInt((await this.#line()).split(";")[0], 16);
          if (size === 0) {
            while ((await this.#line()) !== "") { /* trailers */ }
            break;
          }
          await this.#need(size + 2);
          parts.push(this.#take(size));
          this.#take(2);
        }
        body = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
        let offset = 0;
        for (const part of parts) {
          body.set(part, offset);
          offset += part.length;
        }
      } else if (get("content-length") !== null) {
        const length = Number(get("content-length"));
        await this.#need(length);
        body = this.#take(length);
      } else {
        while (await this.#fill()) { /* until the peer closes */ }
        body = this.#take(this.#buffer.length);
        closes = true;
      }
    }
    if (closes) this.close();
    return { status, headers, body, closes };
  }

  /**
   * Sends one request and reads its response. The request is written while the response is
   * read, so a server answering before it read the whole body (413, 408) is seen.
   *
   * @example
   * ```ts ignore
   * const response = await connection.request("GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
   * ```
   */
  async request(data: Uint8Array | string, options: { head?: boolean } = {}): Promise<RawResponse> {
    const writing = this.write(data);
    try {
      return await this.readResponse(options);
    } finally {
      await writing;
    }
  }
}
