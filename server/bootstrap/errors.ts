/**
 * The error family of bootstrap resolution and the secret file.
 *
 * @module
 */

/** Stable codes of {@linkcode BootstrapError}. */
export type BootstrapErrorCode =
  /** Some `AUTOMATION_RUNTIME_BOOTSTRAP_*` variables are set, others are missing. */
  | "incompleteEnvironment"
  /** A bootstrap value (bearer, principal, capabilities, expiry) is malformed. */
  | "invalidValue"
  /** The bootstrap credential has expired. */
  | "bootstrapExpired"
  /** No source yielded a bootstrap and the bind is not loopback. */
  | "noBootstrap"
  /** The secret file exists but cannot be read. */
  | "secretFileUnreadable"
  /** The secret file is not a dotenv file this runtime can read. */
  | "secretFileUnparseable"
  /** The secret file lacks one of the four variables. */
  | "secretFileIncomplete"
  /** The secret file is readable by group or others (POSIX). */
  | "secretFileInsecure"
  /** `init` found an existing secret file and `--force` was not given. */
  | "secretFileExists"
  /** The secret file could not be written. */
  | "secretFileWriteFailed"
  /** The operating-system configuration directory cannot be determined. */
  | "noConfigDirectory";

/**
 * Raised when the bootstrap credential cannot be resolved, read or written. The message is one
 * line, names the file or variable at fault and never contains a secret.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BootstrapError } from "./errors.ts";
 * const error = new BootstrapError("noBootstrap", "No bootstrap credential found");
 * assert.equal(error.code, "noBootstrap");
 * ```
 */
export class BootstrapError extends Error {
  /** Stable machine-readable code. */
  readonly code: BootstrapErrorCode;

  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { BootstrapError } from "./errors.ts";
   * const error = new BootstrapError("secretFileExists", "Secret file /tmp/x exists; use --force");
   * assert.equal(error.code, "secretFileExists");
   * ```
   */
  constructor(code: BootstrapErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "BootstrapError";
    this.code = code;
  }
}
