/**
 * A local OIDC issuer for tests: signing keys made in the test (RSA, EC or Ed25519, with `jose`
 * over WebCrypto), the discovery document and the JWKS served on 127.0.0.1 (random port) with
 * `Deno.serve`, and ID tokens shaped like GitHub Actions' signed on demand.
 *
 * - {@linkcode LocalOidcIssuer.discoveryFetches} and {@linkcode LocalOidcIssuer.jwksFetches}
 *   count the requests for each document;
 * - {@linkcode LocalOidcIssuer.rotate} publishes a new key (new `kid`) and signs with it;
 * - {@linkcode LocalOidcIssuer.intercept} answers a request in the issuer's place (an oversized
 *   or streamed document, an error status, a redirect, a request that never answers);
 * - {@linkcode LocalOidcIssuer.unsigned}, {@linkcode LocalOidcIssuer.hmacWithPublicKey},
 *   {@linkcode tamper} and {@linkcode makeSigningKey} (an unpublished key) make hostile tokens.
 *
 * The issuer's name is its loopback URL (`http://127.0.0.1:PORT`, which a verifier admits only
 * with loopback HTTP allowed), or any name given at start (an `https:` one, say), served through
 * {@linkcode LocalOidcIssuer.fetch}, which hands requests for that name to the same handler in
 * process.
 *
 * @module
 */
import { base64url, exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT } from "jose";

/** The algorithms the issuer signs with. */
export type SigningAlgorithm = "RS256" | "ES256" | "EdDSA";

/** The audience tokens are minted for unless told otherwise. */
export const AUDIENCE = "automation-runtime";

/** A signing key and its published JWK. */
export interface SigningKey {
  /** The key id (`kid`). */
  readonly kid: string;
  /** The algorithm. */
  readonly alg: SigningAlgorithm;
  /** Signs tokens. */
  readonly privateKey: CryptoKey;
  /** The public key. */
  readonly publicKey: CryptoKey;
  /** The public key as the JWKS publishes it (`kid`, `alg`, `use: "sig"`). */
  readonly jwk: JWK;
}

/** Makes a signing key (not published anywhere until an issuer adds it). */
export async function makeSigningKey(
  alg: SigningAlgorithm = "RS256",
  kid: string = crypto.randomUUID(),
): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { kid, alg, privateKey, publicKey, jwk };
}

/** Options of {@linkcode LocalOidcIssuer.start}. */
export interface LocalOidcIssuerOptions {
  /** The first key's algorithm (default RS256). */
  algorithm?: SigningAlgorithm;
  /** The issuer's name (default: its loopback URL); requests for it go through `fetch`. */
  issuer?: string;
  /** The clock minted tokens' times come from, in ms (default `Date.now`). */
  now?: () => number;
}

/** Options of {@linkcode LocalOidcIssuer.mint}. */
export interface MintOptions {
  /** The key to sign with (default the current one); an unpublished key makes an unknown `kid`. */
  key?: SigningKey;
  /** Header parameters to set (undefined removes one, such as `kid`). */
  header?: Record<string, unknown>;
}

/** Answers a request in the issuer's place, or returns undefined to let the issuer answer. */
export type Interceptor = (
  request: Request,
  path: string,
) => Response | Promise<Response> | undefined;

/** The local issuer (see the module documentation). */
export class LocalOidcIssuer {
  /** The loopback URL the server listens on. */
  readonly url: string;
  /** The issuer's name (`iss`, and the discovery document's `issuer`). */
  readonly issuer: string;
  /** Requests for the discovery document so far. */
  discoveryFetches = 0;
  /** Requests for the JWKS so far. */
  jwksFetches = 0;
  /** Answers requests in the issuer's place while set. */
  intercept: Interceptor | null = null;
  /** The keys the JWKS publishes. */
  published: SigningKey[];
  /** The key tokens are signed with. */
  current: SigningKey;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #now: () => number;

  private constructor(
    server: Deno.HttpServer<Deno.NetAddr>,
    key: SigningKey,
    options: LocalOidcIssuerOptions,
  ) {
    this.#server = server;
    this.url = `http://127.0.0.1:${server.addr.port}`;
    this.issuer = options.issuer ?? this.url;
    this.#now = options.now ?? Date.now;
    this.current = key;
    this.published = [key];
  }

  /** Starts an issuer with one key. */
  static async start(options: LocalOidcIssuerOptions = {}): Promise<LocalOidcIssuer> {
    const key = await makeSigningKey(options.algorithm ?? "RS256");
    let issuer: LocalOidcIssuer | null = null;
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request) => issuer!.handle(request),
    );
    issuer = new LocalOidcIssuer(server, key, options);
    return issuer;
  }

  /** Requests for this issuer's name answered in process; others go to the network. */
  readonly fetch: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    if (!request.url.startsWith(this.issuer)) return fetch(request);
    return Promise.resolve(this.handle(request));
  };

  /** The discovery document as served (GitHub's fields). */
  discoveryDocument(): Record<string, unknown> {
    return {
      issuer: this.issuer,
      jwks_uri: `${this.issuer}/.well-known/jwks`,
      subject_types_supported: ["public", "pairwise"],
      response_types_supported: ["id_token"],
      claims_supported: ["sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "repository"],
      id_token_signing_alg_values_supported: ["RS256", "ES256", "EdDSA"],
      scopes_supported: ["openid"],
    };
  }

  /** The JWKS as served. */
  jwksDocument(): { keys: JWK[] } {
    return { keys: this.published.map((key) => key.jwk) };
  }

  /** Answers one request: the discovery document, the JWKS, or 404. */
  async handle(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path === "/.well-known/openid-configuration") this.discoveryFetches++;
    if (path === "/.well-known/jwks") this.jwksFetches++;
    const intercepted = await this.intercept?.(request, path);
    if (intercepted !== undefined) return intercepted;
    if (path === "/.well-known/openid-configuration") {
      return Response.json(this.discoveryDocument());
    }
    if (path === "/.well-known/jwks") return Response.json(this.jwksDocument());
    return new Response("not found", { status: 404 });
  }

  /**
   * Makes a new key and signs with it from now on. The JWKS publishes it beside the old ones
   * (`keepOld`, the default) or alone.
   */
  async rotate(
    options: { alg?: SigningAlgorithm; keepOld?: boolean } = {},
  ): Promise<SigningKey> {
    const key = await makeSigningKey(options.alg ?? this.current.alg);
    this.published = options.keepOld === false ? [key] : [...this.published, key];
    this.current = key;
    return key;
  }

  /**
   * Claims shaped like a GitHub Actions ID token for `octo-org/octo-repo` on `main`, issued now
   * and valid for five minutes; `overrides` replace claims, and an undefined one removes it.
   */
  claims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
    const iat = Math.floor(this.#now() / 1000);
    const claims: Record<string, unknown> = {
      jti: crypto.randomUUID(),
      sub: "repo:octo-org/octo-repo:ref:refs/heads/main",
      aud: AUDIENCE,
      ref: "refs/heads/main",
      sha: "d6c8a2b1e4f05937a1c2b3d4e5f60718293a4b5c",
      repository: "octo-org/octo-repo",
      repository_owner: "octo-org",
      repository_owner_id: "1234567",
      run_id: "9876543210",
      run_number: "42",
      run_attempt: "1",
      repository_visibility: "private",
      repository_id: "7654321",
      actor_id: "1111111",
      actor: "octocat",
      workflow: "CI",
      head_ref: "",
      base_ref: "",
      event_name: "push",
      ref_type: "branch",
      environment: "production",
      workflow_ref: "octo-org/octo-repo/.github/workflows/ci.yml@refs/heads/main",
      workflow_sha: "d6c8a2b1e4f05937a1c2b3d4e5f60718293a4b5c",
      job_workflow_ref: "octo-org/octo-repo/.github/workflows/ci.yml@refs/heads/main",
      job_workflow_sha: "d6c8a2b1e4f05937a1c2b3d4e5f60718293a4b5c",
      runner_environment: "github-hosted",
      iss: this.issuer,
      nbf: iat,
      iat,
      exp: iat + 300,
    };
    for (const [name, value] of Object.entries(overrides)) {
      if (value === undefined) delete claims[name];
      else claims[name] = value;
    }
    return claims;
  }

  /** A signed token with {@linkcode LocalOidcIssuer.claims} and `overrides`. */
  async mint(overrides: Record<string, unknown> = {}, options: MintOptions = {}): Promise<string> {
    const key = options.key ?? this.current;
    const header: Record<string, unknown> = { alg: key.alg, typ: "JWT", kid: key.kid };
    for (const [name, value] of Object.entries(options.header ?? {})) {
      if (value === undefined) delete header[name];
      else header[name] = value;
    }
    return await new SignJWT(this.claims(overrides))
      .setProtectedHeader(header as { alg: string })
      .sign(key.privateKey);
  }

  /** A token with `alg: none`, the current `kid` and an empty signature. */
  unsigned(overrides: Record<string, unknown> = {}): string {
    const header = { alg: "none", typ: "JWT", kid: this.current.kid };
    return `${encodeJson(header)}.${encodeJson(this.claims(overrides))}.`;
  }

  /**
   * A token HS256-signed with the current public key (its SPKI PEM, as a confused verifier would
   * load it) as the HMAC secret, under the current `kid`.
   */
  async hmacWithPublicKey(overrides: Record<string, unknown> = {}): Promise<string> {
    const secret = new TextEncoder().encode(await exportSPKI(this.current.publicKey));
    return await new SignJWT(this.claims(overrides))
      .setProtectedHeader({ alg: "HS256", typ: "JWT", kid: this.current.kid })
      .sign(secret);
  }

  /** Stops the server. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }
}

/** `token` with its payload's claims changed by `overrides`, header and signature kept. */
export function tamper(token: string, overrides: Record<string, unknown>): string {
  const [header, payload, signature] = token.split(".");
  const claims = JSON.parse(new TextDecoder().decode(base64url.decode(payload)));
  return `${header}.${encodeJson({ ...claims, ...overrides })}.${signature}`;
}

/** The claims of `token`, decoded without verification (for assertions). */
export function decodeClaims(token: string): Record<string, unknown> {
  return JSON.parse(new TextDecoder().decode(base64url.decode(token.split(".")[1])));
}

function encodeJson(value: unknown): string {
  return base64url.encode(JSON.stringify(value));
}
