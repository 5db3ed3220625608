/**
 * The four `AUTOMATION_RUNTIME_BOOTSTRAP_*` variables: their names, validation, generation and
 * the dotenv text of the secret file.
 *
 * @module
 */
import { hmacSha256 } from "../digest.ts";
import { CAPABILITIES, type Capability } from "../store/types.ts";
import { parseRfc3339 } from "../time.ts";
import { PRINCIPAL_ID_PATTERN } from "../../wire/mod.ts";
import { BootstrapError } from "./errors.ts";

/** Prefix shared by every bootstrap variable. */
export const BOOTSTRAP_PREFIX = "AUTOMATION_RUNTIME_BOOTSTRAP_";

/**
 * Names of the bootstrap variables: the four a bootstrap needs, then the two a secret file
 * written by `init` also holds (the authority key and the bearer's generation; see
 * {@linkcode BootstrapValues}).
 */
export const BOOTSTRAP_VARIABLES = Object.freeze(
  {
    token: "AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN",
    principal: "AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL",
    capabilities: "AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES",
    expiresAt: "AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT",
    authorityKey: "AUTOMATION_RUNTIME_BOOTSTRAP_AUTHORITY_KEY",
    generation: "AUTOMATION_RUNTIME_BOOTSTRAP_GENERATION",
  } as const,
);

/** The four required variable names in the order they are written and reported. */
export const BOOTSTRAP_VARIABLE_NAMES: readonly string[] = Object.freeze([
  BOOTSTRAP_VARIABLES.token,
  BOOTSTRAP_VARIABLES.principal,
  BOOTSTRAP_VARIABLES.capabilities,
  BOOTSTRAP_VARIABLES.expiresAt,
]);

/** The two optional variable names: absent in a bootstrap made before rotation existed. */
export const OPTIONAL_BOOTSTRAP_VARIABLE_NAMES: readonly string[] = Object.freeze([
  BOOTSTRAP_VARIABLES.authorityKey,
  BOOTSTRAP_VARIABLES.generation,
]);

/** Default capabilities of a generated bootstrap principal. */
export const DEFAULT_BOOTSTRAP_CAPABILITIES: readonly Capability[] = Object.freeze(
  [
    "session:read",
    "session:write",
    "session:approve",
    "authority:admin",
  ] as const,
);

/** Default lifetime of a generated bootstrap credential, in days. */
export const DEFAULT_TTL_DAYS = 30;

/** The validated content of the four bootstrap variables. */
export interface BootstrapValues {
  /** Plaintext bearer. */
  token: string;
  /** Lower-case UUID of the bootstrap principal. */
  principalId: string;
  /** Its capabilities, unique, in the order given. */
  capabilities: Capability[];
  /** Expiry, normalised to RFC 3339 UTC with milliseconds. */
  expiresAt: string;
  /**
   * The authority key, base64url of 32 random bytes, made by the first `init` and kept by every
   * rotation: the store namespace and the bearers of issued principals derive from it, not from
   * the bootstrap bearer, so a rotated bearer leaves them valid. Absent in a bootstrap made
   * before rotation existed: the key is then derived from the bearer, as it always was.
   */
  authorityKey?: string;
  /**
   * The bearer's generation: 0 for a bootstrap without one, 1 from `init`, one more on every
   * `init --rotate`. A store held by a generation refuses the ones before it.
   */
  generation: number;
}

/**
 * Checks a bootstrap bearer: 32 to 512 characters, each 0x21 to 0x7E except `,`. Returns a reason
 * for the error message, or null when the bearer is acceptable. The reason never quotes the bearer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkBearerSyntax } from "./variables.ts";
 * assert.equal(checkBearerSyntax("short"), "is not high entropy (32 to 512 characters required)");
 * ```
 */
export function checkBearerSyntax(token: string): string | null {
  if (token.length < 32 || token.length > 512) {
    return "is not high entropy (32 to 512 characters required)";
  }
  for (let i = 0; i < token.length; i++) {
    const code = token.charCodeAt(i);
    if (code < 0x21 || code > 0x7e || code === 0x2c) {
      return `has an invalid character at position ${
        i + 1
      } (printable ASCII without spaces or commas required)`;
    }
  }
  return null;
}

/**
 * Parses a comma-separated capability list; blanks around names are ignored and repeats are
 * dropped. Returns the reason of the failure as a string when the list is empty or names an
 * unknown capability.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseCapabilityList } from "./variables.ts";
 * assert.deepEqual(parseCapabilityList("session:read, authority:admin"), [
 *   "session:read",
 *   "authority:admin",
 * ]);
 * ```
 */
export function parseCapabilityList(text: string): Capability[] | string {
  const names = text.split(",").map((name) => name.trim());
  if (names.some((name) => name === "")) {
    return `must be a comma-separated list of ${CAPABILITIES.join(", ")}`;
  }
  const result: Capability[] = [];
  for (const name of names) {
    if (!(CAPABILITIES as readonly string[]).includes(name)) {
      return `names an unknown capability "${name.slice(0, 40)}" (known: ${
        CAPABILITIES.join(", ")
      })`;
    }
    if (!result.includes(name as Capability)) result.push(name as Capability);
  }
  return result;
}

/** Options of {@linkcode parseBootstrapValues}. */
export interface ParseBootstrapValuesOptions {
  /** Where the values came from, for messages: `the environment` or `/path/to/bootstrap.env`. */
  origin: string;
}

/**
 * Validates the four raw bootstrap values (all present). Throws a {@linkcode BootstrapError}
 * with code `invalidValue` naming the variable and the origin, never the secret.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseBootstrapValues } from "./variables.ts";
 * const values = parseBootstrapValues({
 *   AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: "art_" + "a".repeat(43),
 *   AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: "0b7a2f6e-2c56-4d1c-9a41-6a4b8b9fb0c1",
 *   AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: "authority:admin",
 *   AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: "2030-01-01T00:00:00Z",
 * }, { origin: "the environment" });
 * assert.deepEqual(values.capabilities, ["authority:admin"]);
 * ```
 */
export function parseBootstrapValues(
  raw: Readonly<Record<string, string>>,
  options: ParseBootstrapValuesOptions,
): BootstrapValues {
  const fail = (name: string, reason: string): never => {
    throw new BootstrapError("invalidValue", `${name} in ${options.origin} ${reason}`);
  };
  const token = raw[BOOTSTRAP_VARIABLES.token];
  const tokenProblem = checkBearerSyntax(token);
  if (tokenProblem !== null) fail(BOOTSTRAP_VARIABLES.token, tokenProblem);

  const principalId = raw[BOOTSTRAP_VARIABLES.principal];
  if (!PRINCIPAL_ID_PATTERN.test(principalId)) {
    fail(BOOTSTRAP_VARIABLES.principal, "is not a lower-case UUID");
  }

  const capabilities = parseCapabilityList(raw[BOOTSTRAP_VARIABLES.capabilities]);
  if (typeof capabilities === "string") fail(BOOTSTRAP_VARIABLES.capabilities, capabilities);

  const expiresMs = parseRfc3339(raw[BOOTSTRAP_VARIABLES.expiresAt]);
  if (expiresMs === null) fail(BOOTSTRAP_VARIABLES.expiresAt, "is not an RFC 3339 timestamp");

  const authorityKey = raw[BOOTSTRAP_VARIABLES.authorityKey];
  if (authorityKey !== undefined && !AUTHORITY_KEY.test(authorityKey)) {
    fail(BOOTSTRAP_VARIABLES.authorityKey, "is not the base64url of 32 bytes (43 characters)");
  }
  const generationText = raw[BOOTSTRAP_VARIABLES.generation];
  const generation = generationText === undefined ? 0 : Number(generationText);
  if (generationText !== undefined && (!/^\d{1,9}$/.test(generationText))) {
    fail(BOOTSTRAP_VARIABLES.generation, "is not a whole number");
  }

  return {
    token,
    principalId,
    capabilities: capabilities as Capability[],
    expiresAt: new Date(expiresMs as number).toISOString(),
    ...(authorityKey === undefined ? {} : { authorityKey }),
    generation,
  };
}

/** An authority key: base64url (no padding) of 32 bytes. */
const AUTHORITY_KEY = /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;

function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * Generates a bearer: `art_` followed by base64url (no padding) of 32 random bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { generateBearer } from "./variables.ts";
 * assert.equal(generateBearer().length, 47);
 * ```
 */
export function generateBearer(): string {
  return "art_" + base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** Options of {@linkcode generateBootstrapValues}. */
export interface GenerateBootstrapOptions {
  /** Lifetime in days (default 30). */
  ttlDays?: number;
  /** Capabilities (default `session:read,session:write,authority:admin`). */
  capabilities?: readonly Capability[];
  /** Current time in ms (default `Date.now()`). */
  now?: number;
}

/**
 * Generates a fresh bootstrap: a new bearer, a random principal, the capabilities and an expiry
 * `ttlDays` from now.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { generateBootstrapValues } from "./variables.ts";
 * const values = generateBootstrapValues({ ttlDays: 7 });
 * assert.equal(values.token.startsWith("art_"), true);
 * ```
 */
export function generateBootstrapValues(options: GenerateBootstrapOptions = {}): BootstrapValues {
  const ttlDays = options.ttlDays ?? DEFAULT_TTL_DAYS;
  const now = options.now ?? Date.now();
  return {
    token: generateBearer(),
    principalId: crypto.randomUUID(),
    capabilities: [...(options.capabilities ?? DEFAULT_BOOTSTRAP_CAPABILITIES)],
    expiresAt: new Date(now + ttlDays * 86_400_000).toISOString(),
    authorityKey: base64url(crypto.getRandomValues(new Uint8Array(32))),
    generation: 1,
  };
}

/** Options of {@linkcode rotateBootstrapValues}. */
export interface RotateBootstrapOptions {
  /** A new lifetime in days from now; absent: the old expiry is kept. */
  ttlDays?: number;
  /** New capabilities; absent: the old ones. */
  capabilities?: readonly Capability[];
  /** Current time in ms (default `Date.now()`). */
  now?: number;
}

/**
 * The next bootstrap of `values` (`init --rotate`): a new bearer of the next generation for the
 * same principal, with the same authority key (for a bootstrap made before rotation existed:
 * the key its bearer derived, now written down), so the store namespace and every issued
 * principal's bearer stay what they were. The expiry is kept unless `ttlDays` is given; an
 * expired one must be renewed (a {@linkcode BootstrapError} `bootstrapExpired` otherwise).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { generateBootstrapValues, rotateBootstrapValues } from "./variables.ts";
 * const first = generateBootstrapValues({ ttlDays: 7 });
 * const next = rotateBootstrapValues(first, { ttlDays: 30 });
 * assert.notEqual(next.token, first.token);
 * assert.equal(next.authorityKey, first.authorityKey);
 * assert.equal(next.principalId, first.principalId);
 * assert.equal(next.generation, 2);
 * ```
 */
export function rotateBootstrapValues(
  values: BootstrapValues,
  options: RotateBootstrapOptions = {},
): BootstrapValues {
  const now = options.now ?? Date.now();
  const expiresAt = options.ttlDays === undefined
    ? values.expiresAt
    : new Date(now + options.ttlDays * 86_400_000).toISOString();
  if (Date.parse(expiresAt) <= now) {
    throw new BootstrapError(
      "bootstrapExpired",
      `The bootstrap expired at ${values.expiresAt}: give --ttl-days to rotate it with a new expiry`,
    );
  }
  return {
    token: generateBearer(),
    principalId: values.principalId,
    capabilities: [...(options.capabilities ?? values.capabilities)],
    expiresAt,
    authorityKey: values.authorityKey ?? base64url(legacyAuthorityKey(values.token)),
    generation: values.generation + 1,
  };
}

/**
 * The authority key of a bootstrap without one of its own: derived from its bearer
 * (HMAC-SHA256 of the bearer), as every bootstrap's was before rotation existed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { legacyAuthorityKey } from "./variables.ts";
 * assert.equal(legacyAuthorityKey("art_" + "a".repeat(43)).length, 32);
 * ```
 */
export function legacyAuthorityKey(token: string): Uint8Array {
  return hmacSha256(token, "automation-runtime/authority/v1");
}

/**
 * The 32 bytes of an authority key (base64url, as the secret file holds it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { authorityKeyBytes, generateBootstrapValues } from "./variables.ts";
 * assert.equal(authorityKeyBytes(generateBootstrapValues().authorityKey!).length, 32);
 * ```
 */
export function authorityKeyBytes(authorityKey: string): Uint8Array {
  const binary = atob(authorityKey.replaceAll("-", "+").replaceAll("_", "/") + "=");
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}

/**
 * Renders bootstrap values as the dotenv text of the secret file. Only generated bearers
 * (base64url) are written, so no value needs quoting.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatSecretFile, generateBootstrapValues } from "./variables.ts";
 * const text = formatSecretFile(generateBootstrapValues());
 * assert.equal(text.includes("AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN=art_"), true);
 * ```
 */
export function formatSecretFile(values: BootstrapValues): string {
  for (const value of [values.token, values.principalId, values.expiresAt, values.authorityKey]) {
    if (value !== undefined && !/^[A-Za-z0-9_:.\-]+$/.test(value)) {
      throw new TypeError("Only generated bootstrap values can be written to the secret file");
    }
  }
  return [
    "# automation-runtime bootstrap credential. Keep it private (mode 0600); never commit it.",
    "# Replace the bearer with `automation-runtime init --rotate` (issued principals stay valid);",
    "# start over with `automation-runtime init --force` (every issued principal is revoked).",
    `${BOOTSTRAP_VARIABLES.token}=${values.token}`,
    `${BOOTSTRAP_VARIABLES.principal}=${values.principalId}`,
    `${BOOTSTRAP_VARIABLES.capabilities}=${values.capabilities.join(",")}`,
    `${BOOTSTRAP_VARIABLES.expiresAt}=${values.expiresAt}`,
    ...(values.authorityKey === undefined
      ? []
      : [`${BOOTSTRAP_VARIABLES.authorityKey}=${values.authorityKey}`]),
    ...(values.generation === 0 ? [] : [`${BOOTSTRAP_VARIABLES.generation}=${values.generation}`]),
    "",
  ].join("\n");
}
