/**
 * The set-up the OIDC tests share: a settable clock, and a local issuer with a verifier that
 * trusts it.
 *
 * @module
 */
import { OidcVerifier } from "../../server/oidc/mod.ts";
import { AUDIENCE, LocalOidcIssuer, type SigningAlgorithm } from "../support/oidc_issuer.ts";

/** A clock that moves only when told. */
export interface TestClock {
  /** The time, in ms since the epoch. */
  now(): number;
  /** Moves the clock forward. */
  advance(seconds: number): void;
}

/** A clock at 2026-07-23T12:00:00Z. */
export function testClock(): TestClock {
  let now = Date.UTC(2026, 6, 23, 12, 0, 0);
  return { now: () => now, advance: (seconds) => now += seconds * 1000 };
}

/** Options of {@linkcode startIssuerAndVerifier}. */
export interface IssuerAndVerifierOptions {
  /** The issuer's signing algorithm (default RS256). */
  algorithm?: SigningAlgorithm;
  /** A name for the issuer, served in process (default: its loopback URL, over the network). */
  issuer?: string;
}

/** A local issuer and a verifier on one test clock, loopback HTTP allowed. */
export interface IssuerAndVerifier {
  /** The clock both use. */
  time: TestClock;
  /** The issuer (close it when done). */
  issuer: LocalOidcIssuer;
  /** The verifier. */
  verifier: OidcVerifier;
  /** What tokens are verified against: the issuer and {@linkcode AUDIENCE}. */
  expected: { issuer: string; audience: string };
}

/** Starts a local issuer and makes a verifier that trusts it. */
export async function startIssuerAndVerifier(
  options: IssuerAndVerifierOptions = {},
): Promise<IssuerAndVerifier> {
  const time = testClock();
  const issuer = await LocalOidcIssuer.start({
    algorithm: options.algorithm,
    issuer: options.issuer,
    now: time.now,
  });
  const verifier = new OidcVerifier({
    allowLoopbackHttp: true,
    now: time.now,
    fetch: options.issuer === undefined ? undefined : issuer.fetch,
  });
  return { time, issuer, verifier, expected: { issuer: issuer.issuer, audience: AUDIENCE } };
}
