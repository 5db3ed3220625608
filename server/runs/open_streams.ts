/**
 * The open streams of this replica: how many there are, in all and per principal, held against
 * their limits (`--max-event-streams`, 503 past it, and `--max-event-streams-per-principal`, 429
 * past it: {@linkcode OpenStreams.admit}), their principals re-checked twice a second, and all of
 * them ended at once when the replica drains or closes. The run event hub and the activity feed
 * share one set for their SSE streams, so a run's events and the activity feed count against the
 * same limits; the MCP endpoint keeps one for the sessions' GET streams, which end within a
 * second of a revocation the same way.
 *
 * A re-check authenticates each distinct credential once, at the injected clock's time (the
 * authenticator shares one authority read between them, so a revocation on any replica ends the
 * streams here within a second). A credential refused for any reason (revoked, expired,
 * superseded, or the authority cannot be read) ends every stream that carries it: fail closed. The
 * client reconnects and resumes, and its next request meets the same checks. The timer runs only
 * while streams are open.
 *
 * @module
 */
import type { Authenticator } from "../authenticator.ts";
import { InterfaceError } from "../errors.ts";

/** How often open streams re-check their principal, in ms: a revocation ends them within 1 s. */
export const PRINCIPAL_CHECK_MS = 500;

/** What {@linkcode OpenStreams} needs of a stream. */
export interface OpenStream {
  /** The `Authorization` of the request that opened it. */
  readonly authorization: string | null;
  /** The principal that opened it (counted against its own limit); absent: not counted. */
  readonly principalId?: string;
  /** Ends the stream and releases what it holds (called once its principal is refused). */
  end(): void;
}

/** Options of {@linkcode OpenStreams}. */
export interface OpenStreamsOptions {
  /** Re-checks the principals. */
  authenticator: Authenticator;
  /** The clock, ms since the epoch. */
  now: () => number;
  /** Time between re-checks, in ms (default {@linkcode PRINCIPAL_CHECK_MS}). */
  checkMs?: number;
  /** Streams {@linkcode OpenStreams.admit} lets open on this replica (default: no limit). */
  maxStreams?: number;
  /** Streams {@linkcode OpenStreams.admit} lets one principal open (default: no limit). */
  maxStreamsPerPrincipal?: number;
}

/** The open event streams of this replica. */
export class OpenStreams {
  readonly #authenticator: Authenticator;
  readonly #now: () => number;
  readonly #checkMs: number;
  readonly #maxStreams: number;
  readonly #maxPerPrincipal: number;
  readonly #streams = new Set<OpenStream>();
  /** Open streams by principal, for the streams that name one. */
  readonly #perPrincipal = new Map<string, number>();
  #checker: ReturnType<typeof setInterval> | undefined;
  #checking = false;

  /** No streams yet; the re-check starts with the first. */
  constructor(options: OpenStreamsOptions) {
    this.#authenticator = options.authenticator;
    this.#now = options.now;
    this.#checkMs = options.checkMs ?? PRINCIPAL_CHECK_MS;
    this.#maxStreams = options.maxStreams ?? Number.POSITIVE_INFINITY;
    this.#maxPerPrincipal = options.maxStreamsPerPrincipal ?? Number.POSITIVE_INFINITY;
  }

  /**
   * Refuses a new stream past the limits: 429 `resourceExhausted` when `principalId` holds as
   * many as it may, 503 `resourceExhausted` when the replica does (both with `Retry-After: 1`).
   */
  admit(principalId: string | undefined): void {
    if (principalId !== undefined && this.countOf(principalId) >= this.#maxPerPrincipal) {
      throw new InterfaceError(
        "resourceExhausted",
        "This principal has as many open event streams on this replica as it may; " +
          "close one first",
        { headers: { "retry-after": "1" }, extra: { limit: "maxEventStreamsPerPrincipal" } },
      );
    }
    if (this.#streams.size >= this.#maxStreams) {
      throw new InterfaceError(
        "resourceExhausted",
        "This replica has as many open event streams as it allows",
        { status: 503, headers: { "retry-after": "1" }, extra: { limit: "maxEventStreams" } },
      );
    }
  }

  /** Streams open now. */
  get size(): number {
    return this.#streams.size;
  }

  /** Streams open now that `principalId` opened. */
  countOf(principalId: string): number {
    return this.#perPrincipal.get(principalId) ?? 0;
  }

  /** A stream opened: its principal is re-checked from now on. */
  add(stream: OpenStream): void {
    if (this.#streams.has(stream)) return;
    this.#streams.add(stream);
    const principalId = stream.principalId;
    if (principalId !== undefined) {
      this.#perPrincipal.set(principalId, this.countOf(principalId) + 1);
    }
    this.#checker ??= setInterval(() => this.#check(), this.#checkMs);
  }

  /** A stream ended (its principal is no longer re-checked). */
  delete(stream: OpenStream): void {
    if (!this.#streams.delete(stream)) return;
    const principalId = stream.principalId;
    if (principalId === undefined) return;
    const count = this.countOf(principalId);
    if (count <= 1) this.#perPrincipal.delete(principalId);
    else this.#perPrincipal.set(principalId, count - 1);
  }

  /** Ends every open stream (drain, close). */
  endAll(): void {
    for (const stream of [...this.#streams]) stream.end();
    this.#stop();
  }

  #stop(): void {
    clearInterval(this.#checker);
    this.#checker = undefined;
  }

  async #check(): Promise<void> {
    if (this.#streams.size === 0) return this.#stop();
    if (this.#checking) return;
    this.#checking = true;
    try {
      // One check per distinct credential; the authenticator shares one authority read.
      const byCredential = new Map<string | null, OpenStream[]>();
      for (const stream of this.#streams) {
        const list = byCredential.get(stream.authorization);
        if (list === undefined) byCredential.set(stream.authorization, [stream]);
        else list.push(stream);
      }
      const now = this.#now();
      await Promise.all([...byCredential].map(async ([authorization, streams]) => {
        try {
          await this.#authenticator.authenticate(authorization, now);
        } catch {
          for (const stream of streams) stream.end();
        }
      }));
    } finally {
      this.#checking = false;
    }
  }
}
