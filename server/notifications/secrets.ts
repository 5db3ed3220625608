/**
 * Signing secrets of notification subscriptions: made here, shown once, and kept encrypted.
 *
 * The service must sign every delivery, so a signing secret cannot be kept as a digest the way
 * bearers are. It is stored encrypted with AES-256-GCM under a key derived (HKDF-SHA256) from the
 * bootstrap's authority key, the 32 random bytes of the secret file that the bearer rotation
 * (`init --rotate`) keeps, with the store namespace and the subscription id as the associated
 * data: the store (a Deno KV file, a PostgreSQL database or its backups) holds only ciphertext,
 * which opens only with the authority key, and a ciphertext moved to another subscription does
 * not open. Every replica of a deployment has the authority key (it shares the bootstrap), and
 * `init --force` replaces it together with the namespace, orphaning every subscription with the
 * rest of the store. The key never leaves this module's closure and is derived once per server.
 *
 * @module
 */
import type { EncryptedSecret } from "../store/types.ts";

/** The prefix of a signing secret, as Standard Webhooks libraries expect. */
export const SECRET_PREFIX = "whsec_";
/** Random bytes of a signing secret. */
const SECRET_BYTES = 32;
const ENCODER = new TextEncoder();
const DECODER = new TextDecoder();

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}

/**
 * A fresh signing secret: `whsec_` and the base64 of 32 random bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { newSigningSecret } from "./secrets.ts";
 * assert.match(newSigningSecret(), /^whsec_[A-Za-z0-9+/]{43}=$/);
 * ```
 */
export function newSigningSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

/**
 * Seals and opens signing secrets under the authority key (see the module doc).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { newSigningSecret, SecretBox } from "./secrets.ts";
 * const box = new SecretBox(crypto.getRandomValues(new Uint8Array(32)), "ns");
 * const secret = newSigningSecret();
 * const sealed = await box.seal(secret, "sub_1", null);
 * assert.ok(!sealed.ciphertext.includes(secret.slice(6, 20)));
 * assert.equal(await box.open(sealed, "sub_1"), secret);
 * await assert.rejects(box.open(sealed, "sub_2"));
 * ```
 */
export class SecretBox {
  readonly #key: Promise<CryptoKey>;
  readonly #namespace: string;

  /** A box over `authorityKey` (copied) for the store namespace `namespace`. */
  constructor(authorityKey: Uint8Array, namespace: string) {
    const ikm = Uint8Array.from(authorityKey);
    this.#namespace = namespace;
    this.#key = crypto.subtle.importKey("raw", ikm, "HKDF", false, ["deriveKey"]).then((base) =>
      crypto.subtle.deriveKey(
        {
          name: "HKDF",
          hash: "SHA-256",
          salt: ENCODER.encode("automation-runtime notifications"),
          info: ENCODER.encode("webhook signing secrets v1"),
        },
        base,
        { name: "AES-GCM", length: 256 },
        false,
        ["encrypt", "decrypt"],
      )
    ).finally(() => ikm.fill(0));
  }

  #aad(subscriptionId: string): Uint8Array<ArrayBuffer> {
    return ENCODER.encode(`${this.#namespace}:${subscriptionId}`);
  }

  /** Encrypts `secret` for `subscriptionId`, to stop signing at `expiresAt` (null: current). */
  async seal(
    secret: string,
    subscriptionId: string,
    expiresAt: number | null,
  ): Promise<EncryptedSecret> {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const ciphertext = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: this.#aad(subscriptionId) },
      await this.#key,
      ENCODER.encode(secret),
    );
    return { iv: toBase64(iv), ciphertext: toBase64(new Uint8Array(ciphertext)), expiresAt };
  }

  /** Decrypts a sealed secret of `subscriptionId`; rejects when it does not open. */
  async open(sealed: EncryptedSecret, subscriptionId: string): Promise<string> {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64(sealed.iv), additionalData: this.#aad(subscriptionId) },
      await this.#key,
      fromBase64(sealed.ciphertext),
    );
    return DECODER.decode(plain);
  }
}
