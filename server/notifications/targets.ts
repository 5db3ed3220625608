/**
 * Where notification deliveries may go. A subscription's URL must be `http` or `https`, without
 * credentials or a fragment, at most 2,048 characters; and unless the `serve` setting
 * `--notification-private-targets allow` says otherwise, every address its host resolves to must be
 * a public one. Refused:
 *
 * - loopback: `127.0.0.0/8`, `::1`, and the names `localhost` and `*.localhost`;
 * - private: `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`, `fc00::/7`, and the shared
 *   `100.64.0.0/10` (where one cloud keeps its metadata service);
 * - link-local: `169.254.0.0/16` (the usual metadata address `169.254.169.254` among them),
 *   `fe80::/10`;
 * - metadata names: `metadata`, `metadata.google.internal`;
 * - and what is no host to send to: `0.0.0.0/8`, `::`, `192.0.0.0/24`, the documentation
 *   ranges (`192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24`, `2001:db8::/32`), the 6to4 relay
 *   `192.88.99.0/24`, the benchmarking `198.18.0.0/15`, multicast, the reserved `240.0.0.0/4`,
 *   broadcast, the discard-only `100::/64`. IPv6 forms of an IPv4 address (`::ffff:a.b.c.d`,
 *   `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4 `2002:a.b.c.d::`) are judged as that IPv4
 *   address; Teredo (`2001::/32`) and local-use NAT64 (`64:ff9b:1::/48`), whose IPv4 address
 *   cannot be told, are refused.
 *
 * The check runs when a subscription is created (422 `webhookTargetNotAllowed`) and again before
 * every attempt, on the addresses the name resolves to then: a name that later resolves to a
 * private address gets no delivery. The attempt then connects to an address that check passed,
 * never resolving the name a second time (`_pinned_post.ts`), so a name answering a public address
 * to the check and a private one to the connection (DNS rebinding) gets nothing either. Redirects
 * are never followed.
 *
 * @module
 */

/** Longest subscription URL. */
export const MAX_TARGET_URL_LENGTH = 2048;

/** Resolves a host name to its addresses (A and AAAA). */
export type ResolveHost = (hostname: string) => Promise<string[]>;

/** Why a target was refused: the message is for the caller and names no address. */
export class TargetRefusedError extends Error {
  /**
   * Creates the error.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { TargetRefusedError } from "./targets.ts";
   * assert.equal(new TargetRefusedError("loopback").name, "TargetRefusedError");
   * ```
   */
  constructor(message: string) {
    super(message);
    this.name = "TargetRefusedError";
  }
}

const BLOCKED_NAMES = new Set(["localhost", "metadata", "metadata.google.internal"]);

/** IPv4 ranges refused, as [first octets as a number, prefix length]. */
const BLOCKED_V4: readonly [string, number][] = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];

function v4Number(address: string): number | null {
  const parts = address.split(".");
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return null;
    const octet = Number(part);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return value;
}

function v4Blocked(value: number): boolean {
  for (const [base, prefix] of BLOCKED_V4) {
    const size = 2 ** (32 - prefix);
    const start = v4Number(base)!;
    if (value >= start && value < start + size) return true;
  }
  return false;
}

/** The 8 groups of an IPv6 address (an embedded IPv4 tail as its two groups), or null. */
function v6Groups(address: string): number[] | null {
  let text = address.toLowerCase();
  const zone = text.indexOf("%");
  if (zone !== -1) text = text.slice(0, zone);
  const lastColon = text.lastIndexOf(":");
  if (lastColon === -1) return null;
  if (text.slice(lastColon + 1).includes(".")) {
    const v4 = v4Number(text.slice(lastColon + 1));
    if (v4 === null) return null;
    const high = Math.floor(v4 / 65536).toString(16);
    const low = (v4 % 65536).toString(16);
    text = `${text.slice(0, lastColon + 1)}${high}:${low}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parse = (part: string) => part === "" ? [] : part.split(":");
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  const values = groups.map((group) => /^[0-9a-f]{1,4}$/.test(group) ? parseInt(group, 16) : NaN);
  return values.some(Number.isNaN) ? null : values;
}

/**
 * Whether an address (IPv4 or IPv6 text) is one deliveries may not go to: loopback, private,
 * link-local, metadata, unspecified, multicast or reserved. Text that is no address is refused.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isRefusedAddress } from "./targets.ts";
 * for (const address of ["127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "fe80::1",
 *   "fd00:ec2::254", "::ffff:192.168.0.1", "100.100.100.200", "2002:7f00:1::", "::ffff:0:7f00:1"]) {
 *   assert.equal(isRefusedAddress(address), true, address);
 * }
 * assert.equal(isRefusedAddress("93.184.215.14"), false);
 * assert.equal(isRefusedAddress("2606:2800:21f:cb07:6820:80da:af6b:8b2c"), false);
 * ```
 */
export function isRefusedAddress(address: string): boolean {
  const v4 = v4Number(address);
  if (v4 !== null) return v4Blocked(v4);
  const groups = v6Groups(address);
  if (groups === null) return true;
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups;
  const embedded = g6 * 65536 + g7;
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64).
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && (g5 === 0xffff || g5 === 0)) {
    if (g5 === 0 && g6 === 0 && (g7 === 0 || g7 === 1)) return true; // :: and ::1
    return v4Blocked(embedded);
  }
  // ::ffff:0:a.b.c.d (IPv4-translated, SIIT).
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0) {
    return v4Blocked(embedded);
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return v4Blocked(embedded);
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return true; // local-use NAT64, 64:ff9b:1::/48
  if (g0 === 0x2002) return v4Blocked(g1 * 65536 + g2); // 6to4: 2002:a.b.c.d::/48
  if (g0 === 0x2001 && (g1 === 0 || g1 === 0xdb8)) return true; // Teredo, documentation
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return true; // discard-only, 100::/64
  if ((g0 & 0xfe00) === 0xfc00) return true; // fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return true; // fe80::/10
  if ((g0 & 0xff00) === 0xff00) return true; // multicast
  return false;
}

/** A host of a URL as an address, without IPv6 brackets; null for a name. */
function addressOf(hostname: string): string | null {
  if (hostname.startsWith("[") && hostname.endsWith("]")) return hostname.slice(1, -1);
  return v4Number(hostname) !== null ? hostname : null;
}

/**
 * Checks a subscription URL's form (not where it leads): `http` or `https`, no credentials, no
 * fragment, at most 2,048 characters. Answers the parsed URL, or throws a `TypeError` saying
 * what is wrong.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseTargetUrl } from "./targets.ts";
 * assert.equal(parseTargetUrl("https://hooks.example.com/x").hostname, "hooks.example.com");
 * assert.throws(() => parseTargetUrl("https://user:pw@hooks.example.com/"), /credentials/);
 * assert.throws(() => parseTargetUrl("ftp://hooks.example.com/"), /http or https/);
 * ```
 */
export function parseTargetUrl(text: string): URL {
  if (text.length > MAX_TARGET_URL_LENGTH) {
    throw new TypeError(`Must be at most ${MAX_TARGET_URL_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError("Must be an absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new TypeError("Must be an http or https URL");
  }
  if (url.username !== "" || url.password !== "") {
    throw new TypeError(
      "Must not hold credentials (put a secret in the path, or verify the signature)",
    );
  }
  if (url.hash !== "") throw new TypeError("Must not have a fragment");
  if (url.hostname === "") throw new TypeError("Must name a host");
  return url;
}

/**
 * Resolves `Deno.resolveDns` A and AAAA records of a name; a name that has neither resolves to
 * nothing.
 *
 * @example
 * ```ts ignore
 * const addresses = await resolveWithDns("hooks.example.com");
 * ```
 */
export async function resolveWithDns(hostname: string): Promise<string[]> {
  const lookups = await Promise.allSettled([
    Deno.resolveDns(hostname, "A"),
    Deno.resolveDns(hostname, "AAAA"),
  ]);
  return lookups.flatMap((lookup) => lookup.status === "fulfilled" ? lookup.value : []);
}

/**
 * Checks where a URL leads and answers the addresses a delivery may connect to: the host's own
 * address, or the addresses its name resolves to (through `resolve`). Unless `allowPrivate`, the
 * host must not be a refused name and every address must be public, else
 * {@linkcode TargetRefusedError} says why; with it, anything goes, and a name that `resolve`
 * does not know answers no address (the system's resolver then finds it when the delivery
 * connects). A delivery connects to these addresses and never resolves the name again
 * (`_pinned_post.ts`): what was checked is where it goes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveTarget, TargetRefusedError } from "./targets.ts";
 * const resolve = (name: string) => Promise.resolve(name === "hooks.example" ? ["93.184.215.14"] : ["10.0.0.1"]);
 * const options = { allowPrivate: false, resolve };
 * assert.deepEqual(await resolveTarget(new URL("https://hooks.example/x"), options), ["93.184.215.14"]);
 * assert.deepEqual(await resolveTarget(new URL("https://[2606:2800::1]/"), options), ["2606:2800::1"]);
 * await assert.rejects(resolveTarget(new URL("https://inner.example/"), options), TargetRefusedError);
 * ```
 */
export async function resolveTarget(
  url: URL,
  options: { allowPrivate: boolean; resolve: ResolveHost },
): Promise<string[]> {
  const hostname = url.hostname.toLowerCase().replace(/\.$/, "");
  if (!options.allowPrivate && (BLOCKED_NAMES.has(hostname) || hostname.endsWith(".localhost"))) {
    throw new TargetRefusedError("The target is a loopback or metadata name");
  }
  const literal = addressOf(hostname);
  if (literal !== null) {
    if (!options.allowPrivate && isRefusedAddress(literal)) throw refusedAddresses();
    return [literal];
  }
  let addresses: string[];
  try {
    addresses = await options.resolve(hostname);
  } catch {
    addresses = [];
  }
  if (options.allowPrivate) return addresses;
  if (addresses.length === 0) throw new TargetRefusedError("The target's host does not resolve");
  if (addresses.some(isRefusedAddress)) throw refusedAddresses();
  return addresses;
}

function refusedAddresses(): TargetRefusedError {
  return new TargetRefusedError(
    "The target resolves to a loopback, private, link-local or metadata address",
  );
}

/**
 * Checks where a URL leads ({@linkcode resolveTarget}, its addresses dropped): with
 * `allowPrivate`, anywhere; otherwise the host must not be a refused name, and every address it
 * is or resolves to (through `resolve`) must be public. Throws {@linkcode TargetRefusedError}
 * saying why.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkTarget, TargetRefusedError } from "./targets.ts";
 * const resolve = () => Promise.resolve(["127.0.0.1"]);
 * await checkTarget(new URL("https://93.184.215.14/"), { allowPrivate: false, resolve });
 * await assert.rejects(
 *   checkTarget(new URL("https://rebound.example/"), { allowPrivate: false, resolve }),
 *   TargetRefusedError,
 * );
 * await checkTarget(new URL("http://127.0.0.1:8080/"), { allowPrivate: true, resolve });
 * ```
 */
export async function checkTarget(
  url: URL,
  options: { allowPrivate: boolean; resolve: ResolveHost },
): Promise<void> {
  if (options.allowPrivate) return;
  await resolveTarget(url, options);
}
