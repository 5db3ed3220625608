/**
 * Maps failures of the PostgreSQL driver to the store's error family without leaking the
 * connection string: messages are rebuilt from error codes, never copied from driver errors that
 * may name hosts, users or URLs.
 *
 * @module
 */
import { StoreUnavailableError } from "../types.ts";

/** Socket and driver codes meaning "the database cannot be reached right now". */
const CONNECTION_CODES: ReadonlyMap<string, string> = new Map([
  ["ECONNREFUSED", "connection refused"],
  ["ECONNRESET", "connection reset"],
  ["ECONNABORTED", "connection aborted"],
  ["ETIMEDOUT", "connection timed out"],
  ["EHOSTUNREACH", "host unreachable"],
  ["EHOSTDOWN", "host down"],
  ["ENETUNREACH", "network unreachable"],
  ["ENETDOWN", "network down"],
  ["ENOTFOUND", "host name not found"],
  ["EAI_AGAIN", "host name lookup failed"],
  ["EPIPE", "connection broken"],
  ["CONNECT_TIMEOUT", "connection timed out"],
  ["CONNECTION_CLOSED", "connection closed"],
  ["CONNECTION_ENDED", "connection ended"],
  ["CONNECTION_DESTROYED", "connection destroyed"],
]);

/** SQLSTATEs (exact, or a two-character class) meaning the server cannot serve us right now. */
const UNAVAILABLE_SQLSTATES: ReadonlyMap<string, string> = new Map([
  ["08", "connection exception"],
  ["57P01", "server shutting down"],
  ["57P02", "server crashed"],
  ["57P03", "server starting up"],
  ["53300", "too many connections"],
  ["25006", "server is read-only"],
]);

/** SQLSTATE classes that make start-up impossible (authentication, unknown database). */
const STARTUP_SQLSTATES: ReadonlyMap<string, string> = new Map([
  ["28", "authentication failed"],
  ["3D", "database does not exist"],
  ["42501", "permission denied"],
]);

function codeOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

function isPostgresError(error: unknown): boolean {
  return error instanceof Error && error.name === "PostgresError";
}

function lookup(table: ReadonlyMap<string, string>, code: string): string | undefined {
  return table.get(code) ?? table.get(code.slice(0, 2));
}

/**
 * Describes why the database is unreachable, or returns undefined when `error` is not a
 * connectivity failure (a bug or a constraint violation, which must not become a 503).
 */
export function describeUnavailable(error: unknown): string | undefined {
  if (error instanceof StoreUnavailableError) return error.message;
  const code = codeOf(error);
  if (code === undefined) {
    if (error instanceof Deno.errors.ConnectionRefused) return "connection refused (ECONNREFUSED)";
    if (error instanceof Deno.errors.ConnectionReset) return "connection reset (ECONNRESET)";
    if (error instanceof Deno.errors.TimedOut) return "connection timed out (ETIMEDOUT)";
    return undefined;
  }
  if (isPostgresError(error)) {
    const reason = lookup(UNAVAILABLE_SQLSTATES, code);
    return reason === undefined ? undefined : `${reason} (SQLSTATE ${code})`;
  }
  const reason = CONNECTION_CODES.get(code);
  return reason === undefined ? undefined : `${reason} (${code})`;
}

/**
 * Turns a driver failure during a store operation into the error the server maps: connectivity
 * failures become {@linkcode StoreUnavailableError}; anything else is returned unchanged.
 */
export function toStoreError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  const reason = describeUnavailable(error);
  return reason === undefined
    ? error
    : new StoreUnavailableError(`PostgreSQL store unavailable: ${reason}`);
}

/**
 * Turns a failure while opening the store into one clear line for `serve`. Connectivity,
 * authentication and missing-database failures become {@linkcode StoreUnavailableError}; a
 * PostgreSQL error keeps the server's own message (it never contains the password).
 */
export function toStartupError(error: unknown): Error {
  const reason = describeUnavailable(error);
  if (reason !== undefined) {
    return new StoreUnavailableError(`PostgreSQL is unreachable: ${reason}`);
  }
  const code = codeOf(error);
  if (isPostgresError(error) && code !== undefined) {
    const family = lookup(STARTUP_SQLSTATES, code) ?? "database error";
    const detail = oneLine((error as Error).message);
    return new StoreUnavailableError(
      `PostgreSQL error at start: ${family}: ${detail} (SQLSTATE ${code})`,
    );
  }
  if (error instanceof Error && error.name === "NotCapable") {
    const hint = error.message.includes("env access")
      ? " (postgres.js reads PG* variables: grant --allow-env=PG*, and name the user in the URL or PGUSER)"
      : "";
    return new StoreUnavailableError(
      `PostgreSQL store lacks a permission: ${oneLine(error.message)}${hint}`,
    );
  }
  const name = code ?? (error instanceof Error ? error.name : "unknown error");
  if (/CERT|TLS|SSL/.test(name)) {
    return new StoreUnavailableError(
      `PostgreSQL TLS certificate rejected (${name})`,
    );
  }
  return new StoreUnavailableError(`PostgreSQL connection failed (${name})`);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** SQLSTATE of a unique constraint violation. */
const UNIQUE_VIOLATION = "23505";

/**
 * Whether `error` is PostgreSQL's unique constraint violation: a racing statement committed the
 * same key first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isUniqueViolation } from "./_errors.ts";
 * assert.equal(isUniqueViolation(new Error("x")), false);
 * ```
 */
export function isUniqueViolation(error: unknown): boolean {
  return isPostgresError(error) && codeOf(error) === UNIQUE_VIOLATION;
}
