import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import {
  parseWebhookEvent,
  signManagedAgentWebhook,
  verifyManagedAgentWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from "../../client/managed_agents/webhooks.ts";

// Standard Webhooks reference vector (libraries/javascript/src/webhook.test.ts, "sign function works").
const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};

const SECRET = "whsec_" + btoa(String.fromCharCode(...new Uint8Array(32).map((_, i) => i * 7 + 3)));
const OTHER_SECRET = "whsec_" + btoa(String.fromCharCode(...new Uint8Array(32).map((_, i) => i)));
const NOW_S = 1_780_000_000;
const NOW_MS = NOW_S * 1000 + 250;
const BODY = JSON.stringify({
  type: "event",
  id: "wevt_01",
  created_at: "2026-05-28T20:26:40Z",
  data: {
    type: "session.status_idled",
    id: "sesn_01",
    organization_id: "org_1",
    workspace_id: "wrkspc_1",
  },
});

async function rejects(
  promise: Promise<unknown>,
  reason: WebhookVerificationReason,
): Promise<WebhookVerificationError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, `expected WebhookVerificationError`);
    assert.equal(error.reason, reason, error.message);
    assert.equal(error.code, "webhookVerificationFailed");
    return error;
  }
  assert.fail(`expected rejection with ${reason}`);
}

function signedHeaders(
  body = BODY,
  { id = "msg_1", seconds = NOW_S, secret = SECRET } = {},
): Record<string, string> {
  const signature = new Webhook(secret).sign(id, new Date(seconds * 1000), body);
  return { "webhook-id": id, "webhook-timestamp": String(seconds), "webhook-signature": signature };
}

Deno.test("reference vector: our signature equals the Standard Webhooks one", async () => {
  for (const secret of [VECTOR.secret, VECTOR.secret.slice("whsec_".length)]) {
    const headers = await signManagedAgentWebhook(VECTOR.payload, secret, {
      id: VECTOR.id,
      timestampSeconds: VECTOR.timestamp,
    });
    assert.equal(headers["webhook-signature"], VECTOR.signature);
  }
});

Deno.test("reference vector: the signature matches, and the non-envelope body is then refused", async () => {
  const headers = {
    "webhook-id": VECTOR.id,
    "webhook-timestamp": String(VECTOR.timestamp),
    "webhook-signature": VECTOR.signature,
  };
  // The vector's payload is not a webhook envelope: passing the signature check is what makes
  // the reason `invalidPayload` rather than `invalidSignature`.
  await rejects(
    verifyManagedAgentWebhook(VECTOR.payload, headers, VECTOR.secret, {
      nowMs: VECTOR.timestamp * 1000,
    }),
    "invalidPayload",
  );
  const flipped = VECTOR.signature.replace("g0hM", "g0hN");
  await rejects(
    verifyManagedAgentWebhook(
      VECTOR.payload,
      { ...headers, "webhook-signature": flipped },
      VECTOR.secret,
      {
        nowMs: VECTOR.timestamp * 1000,
      },
    ),
    "invalidSignature",
  );
});

Deno.test("payloads signed by npm:standardwebhooks verify, with any header form and case", async () => {
  const headers = signedHeaders();
  const forms: WebhookHeaders[] = [
    headers,
    new Headers(headers),
    Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v])),
    Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    { ...headers, "x-unrelated": undefined },
    // A Headers-like object of another fetch implementation.
    { get: (name: string) => new Headers(headers).get(name) } as unknown as Headers,
  ];
  for (const form of forms) {
    const event = await verifyManagedAgentWebhook(BODY, form, SECRET, { nowMs: NOW_MS });
    assert.deepEqual(event, JSON.parse(BODY));
  }
  const bytes = new TextEncoder().encode(BODY);
  const event = await verifyManagedAgentWebhook(bytes, headers, SECRET, { nowMs: NOW_MS });
  assert.equal(event.data.type, "session.status_idled");
});

Deno.test("payloads we sign verify with npm:standardwebhooks", async () => {
  const seconds = Math.floor(Date.now() / 1000);
  const headers = await signManagedAgentWebhook(BODY, SECRET, { timestampSeconds: seconds });
  assert.match(headers["webhook-id"], /^msg_[0-9a-f]{32}$/);
  assert.deepEqual(new Webhook(SECRET).verify(BODY, { ...headers }), JSON.parse(BODY));
  const fromBytes = await signManagedAgentWebhook(new TextEncoder().encode(BODY), SECRET, {
    id: headers["webhook-id"],
    timestampSeconds: seconds,
  });
  assert.equal(fromBytes["webhook-signature"], headers["webhook-signature"]);
});

Deno.test("a tampered body, id or timestamp fails the signature", async () => {
  const headers = signedHeaders();
  const options = { nowMs: NOW_MS };
  await rejects(
    verifyManagedAgentWebhook(BODY.replace("sesn_01", "sesn_02"), headers, SECRET, options),
    "invalidSignature",
  );
  await rejects(
    verifyManagedAgentWebhook(BODY, { ...headers, "webhook-id": "msg_2" }, SECRET, options),
    "invalidSignature",
  );
  await rejects(
    verifyManagedAgentWebhook(
      BODY,
      { ...headers, "webhook-timestamp": String(NOW_S + 1) },
      SECRET,
      options,
    ),
    "invalidSignature",
  );
});

Deno.test("a re-serialized body fails the signature", async () => {
  const body = '{ "type": "event", "id": "wevt_1", "created_at": "2026-05-28T20:26:40Z", ' +
    '"data": { "type": "agent.created", "id": "agent_1" } }';
  const headers = signedHeaders(body);
  await verifyManagedAgentWebhook(body, headers, SECRET, { nowMs: NOW_MS });
  const reserialized = JSON.stringify(JSON.parse(body));
  assert.notEqual(reserialized, body);
  await rejects(
    verifyManagedAgentWebhook(reserialized, headers, SECRET, { nowMs: NOW_MS }),
    "invalidSignature",
  );
});

Deno.test("a wrong secret fails the signature", async () => {
  await rejects(
    verifyManagedAgentWebhook(BODY, signedHeaders(), OTHER_SECRET, { nowMs: NOW_MS }),
    "invalidSignature",
  );
});

Deno.test("the timestamp must be within the tolerance both ways", async () => {
  for (const offset of [-300, 0, 300]) {
    const headers = signedHeaders(BODY, { seconds: NOW_S + offset });
    await verifyManagedAgentWebhook(BODY, headers, SECRET, { nowMs: NOW_S * 1000 });
  }
  for (const offset of [-301, 301, -86_400]) {
    const headers = signedHeaders(BODY, { seconds: NOW_S + offset });
    const error = await rejects(
      verifyManagedAgentWebhook(BODY, headers, SECRET, { nowMs: NOW_S * 1000 }),
      "timestampOutOfTolerance",
    );
    assert.match(error.message, offset < 0 ? /too old/ : /too new/);
  }
  const headers = signedHeaders(BODY, { seconds: NOW_S - 20 });
  await rejects(
    verifyManagedAgentWebhook(BODY, headers, SECRET, { nowMs: NOW_S * 1000, toleranceSeconds: 10 }),
    "timestampOutOfTolerance",
  );
  // Without nowMs the clock is used: a delivery signed now passes, one from 2021 does not.
  await verifyManagedAgentWebhook(BODY, await signManagedAgentWebhook(BODY, SECRET), SECRET);
  await rejects(
    verifyManagedAgentWebhook(BODY, signedHeaders(BODY, { seconds: VECTOR.timestamp }), SECRET),
    "timestampOutOfTolerance",
  );
});

Deno.test("a malformed timestamp is refused before the signature", async () => {
  const headers = signedHeaders();
  for (const bad of ["abc", "17e8", "-5", "1780000000.5", "0x10", "1780000000abc"]) {
    await rejects(
      verifyManagedAgentWebhook(BODY, { ...headers, "webhook-timestamp": bad }, SECRET, {
        nowMs: NOW_MS,
      }),
      "invalidTimestamp",
    );
  }
});

Deno.test("missing or empty headers are refused, and nothing is parsed without them", async () => {
  const headers = signedHeaders();
  for (const name of Object.keys(headers)) {
    const without: Record<string, string | undefined> = { ...headers };
    delete without[name];
    const error = await rejects(
      verifyManagedAgentWebhook(BODY, without, SECRET, { nowMs: NOW_MS }),
      "missingHeader",
    );
    assert.match(error.message, new RegExp(name));
    for (const empty of ["", "   ", undefined]) {
      await rejects(
        verifyManagedAgentWebhook(BODY, { ...headers, [name]: empty }, SECRET, { nowMs: NOW_MS }),
        "missingHeader",
      );
    }
    await rejects(
      verifyManagedAgentWebhook(BODY, { ...headers, [name]: [] }, SECRET, { nowMs: NOW_MS }),
      "missingHeader",
    );
  }
  // No headers at all never falls back to parsing the body.
  await rejects(verifyManagedAgentWebhook(BODY, {}, SECRET), "missingHeader");
  await rejects(verifyManagedAgentWebhook(BODY, new Headers(), SECRET), "missingHeader");
});

Deno.test("several signatures: any valid v1 passes, other versions are skipped", async () => {
  const headers = signedHeaders();
  const valid = headers["webhook-signature"];
  const value = valid.slice(3);
  const otherValid = signedHeaders(BODY, { secret: OTHER_SECRET })["webhook-signature"];
  const accepted = [
    `v1,bm90IGEgc2lnbmF0dXJl ${valid}`,
    `${valid} v1,bm90IGEgc2lnbmF0dXJl`,
    `v1a,${value} ${otherValid} ${valid} v2,xyz`,
    `  ${otherValid}   ${valid}  `,
  ];
  for (const signature of accepted) {
    await verifyManagedAgentWebhook(BODY, { ...headers, "webhook-signature": signature }, SECRET, {
      nowMs: NOW_MS,
    });
  }
  // Array values and repeated `Headers` entries are lists of signatures too.
  await verifyManagedAgentWebhook(
    BODY,
    { ...headers, "webhook-signature": [otherValid, valid] },
    SECRET,
    { nowMs: NOW_MS },
  );
  const repeated = new Headers(headers);
  repeated.set("webhook-signature", otherValid);
  repeated.append("webhook-signature", valid);
  await verifyManagedAgentWebhook(BODY, repeated, SECRET, { nowMs: NOW_MS });

  const refused = [
    `v2,${value}`,
    `v1a,${value}`,
    value,
    `${otherValid} v1,${value.slice(0, -2)}`,
    `v1,${value}x`,
    `V1,${value}`,
  ];
  for (const signature of refused) {
    await rejects(
      verifyManagedAgentWebhook(BODY, { ...headers, "webhook-signature": signature }, SECRET, {
        nowMs: NOW_MS,
      }),
      "invalidSignature",
    );
  }
});

Deno.test("an unusable secret is refused without echoing it", async () => {
  const headers = signedHeaders();
  for (const secret of ["", "whsec_", "whsec_not base64!", "whsec_%%%%"]) {
    const error = await rejects(
      verifyManagedAgentWebhook(BODY, headers, secret, { nowMs: NOW_MS }),
      "invalidSecret",
    );
    if (secret.length > 6) assert.ok(!error.message.includes(secret.slice(6)));
  }
  await rejects(signManagedAgentWebhook(BODY, "whsec_"), "invalidSecret");
});

Deno.test("errors never contain the secret, the signature or the body", async () => {
  const headers = signedHeaders();
  const secretPart = SECRET.slice(6);
  const cases: (() => Promise<unknown>)[] = [
    () => verifyManagedAgentWebhook(BODY + " ", headers, SECRET, { nowMs: NOW_MS }),
    () => verifyManagedAgentWebhook(BODY, headers, SECRET, { nowMs: NOW_MS + 10_000_000 }),
    () =>
      verifyManagedAgentWebhook("not json", signedHeaders("not json"), SECRET, { nowMs: NOW_MS }),
  ];
  for (const run of cases) {
    const error = await run().then(() => assert.fail("expected rejection"), (e: Error) => e);
    for (
      const secret of [secretPart, headers["webhook-signature"].slice(3), "sesn_01", "not json"]
    ) {
      assert.ok(!error.message.includes(secret), error.message);
    }
  }
});

Deno.test("a verified body that is not an envelope is refused", async () => {
  const bodies = [
    "not json",
    "[]",
    "null",
    '{"type":"event","id":"e","created_at":"t"}',
    '{"type":"event","id":"e","created_at":"t","data":{"type":"agent.created"}}',
    '{"type":"event","created_at":"t","data":{"type":"agent.created","id":"a"}}',
    '{"type":"event","id":"e","data":{"type":"agent.created","id":"a"}}',
    '{"id":"e","created_at":"t","data":{"type":"agent.created","id":"a"}}',
    '{"type":"event","id":7,"created_at":"t","data":{"type":"agent.created","id":"a"}}',
    '{"type":"event","id":"e","created_at":"t","data":{"type":"","id":"a"}}',
    '{"type":"event","id":"e","created_at":"t","data":{"type":"x","id":"a","workspace_id":5}}',
  ];
  for (const body of bodies) {
    await rejects(
      verifyManagedAgentWebhook(body, signedHeaders(body), SECRET, { nowMs: NOW_MS }),
      "invalidPayload",
    );
    assert.throws(
      () => parseWebhookEvent(body),
      (e) => e instanceof WebhookVerificationError && e.reason === "invalidPayload",
    );
  }
  const invalidUtf8 = new Uint8Array([0x7b, 0xff, 0x7d]);
  assert.throws(
    () => parseWebhookEvent(invalidUtf8),
    (e) => e instanceof WebhookVerificationError && e.reason === "invalidPayload",
  );
});

Deno.test("parseWebhookEvent keeps unknown data types and extra fields", () => {
  const body = JSON.stringify({
    type: "event",
    id: "wevt_9",
    created_at: "2026-05-28T20:26:40Z",
    data: { type: "memory_store.created", id: "memstore_1", organization_id: null, extra: 1 },
    extra: true,
  });
  const event = parseWebhookEvent(body);
  assert.equal(event.data.type, "memory_store.created");
  assert.equal(event.data.extra, 1);
  assert.equal(event.extra, true);
  assert.deepEqual(parseWebhookEvent(new TextEncoder().encode(body)), event);
});

Deno.test("bad options and argument types are programming errors", async () => {
  const headers = signedHeaders();
  await assert.rejects(
    verifyManagedAgentWebhook(BODY, headers, SECRET, { toleranceSeconds: -1 }),
    TypeError,
  );
  await assert.rejects(verifyManagedAgentWebhook(BODY, headers, SECRET, { nowMs: NaN }), TypeError);
  await assert.rejects(
    verifyManagedAgentWebhook(JSON.parse(BODY), headers, SECRET, { nowMs: NOW_MS }),
    TypeError,
  );
  await assert.rejects(signManagedAgentWebhook(BODY, SECRET, { id: "a.b" }), TypeError);
  await assert.rejects(signManagedAgentWebhook(BODY, SECRET, { timestampSeconds: 1.5 }), TypeError);
});

/** The reference: node:crypto's HMAC-SHA256 of `<id>.<timestamp>.<body>`, as a header value. */
function referenceSignature(
  secretBytes: Uint8Array,
  id: string,
  seconds: number,
  body: string | Uint8Array,
): string {
  const mac = createHmac("sha256", secretBytes).update(`${id}.${seconds}.`).update(body);
  return `v1,${mac.digest("base64")}`;
}

function envelopeOfLength(length: number, filler: string): string {
  const base = JSON.stringify({
    type: "event",
    id: "wevt_len",
    created_at: "2026-05-28T20:26:40Z",
    data: { type: "agent.created", id: "agent_1", pad: "" },
  });
  // `filler` is one UTF-16 code unit; JSON.stringify keeps it as it is.
  const pad = filler.repeat(Math.max(0, length - base.length));
  return base.replace('"pad":""', `"pad":"${pad}"`);
}

Deno.test("short and long bodies, strings and bytes, sign like node:crypto on both hashing paths", async () => {
  // Key lengths: short, one block, over a block (hashed first, per RFC 2104).
  for (const keyLength of [1, 24, 32, 64, 65, 100]) {
    const secretBytes = new Uint8Array(keyLength).map((_, i) => (i * 31 + keyLength) & 0xff);
    const secret = "whsec_" + btoa(String.fromCharCode(...secretBytes));
    // Every length modulo the 64-byte block (SHA-256 padding edges at 55 and 56), and lengths
    // around the JavaScript/WebCrypto switch at 4 KiB.
    const lengths = [...Array.from({ length: 64 }, (_, i) => 150 + i), 4095, 4096, 4097, 9000];
    for (const length of [...lengths, 70_000]) {
      for (const filler of ["x", "é", "€"]) {
        const body = envelopeOfLength(length, filler);
        const bytes = new TextEncoder().encode(body);
        const expected = referenceSignature(secretBytes, "msg_len", NOW_S, body);
        for (const raw of [body, bytes]) {
          const headers = await signManagedAgentWebhook(raw, secret, {
            id: "msg_len",
            timestampSeconds: NOW_S,
          });
          assert.equal(headers["webhook-signature"], expected, `${keyLength} ${length} ${filler}`);
          const event = await verifyManagedAgentWebhook(raw, headers, secret, { nowMs: NOW_MS });
          assert.equal(event.id, "wevt_len");
        }
      }
    }
  }
});

Deno.test("many secrets in turn: each verifies only its own deliveries", async () => {
  // More secrets than the key cache holds, twice over, so entries are evicted and rebuilt.
  const secrets = Array.from(
    { length: 20 },
    (_, n) => "whsec_" + btoa(String.fromCharCode(...new Uint8Array(32).fill(n + 1))),
  );
  for (let pass = 0; pass < 2; pass++) {
    for (const [n, secret] of secrets.entries()) {
      const headers = signedHeaders(BODY, { secret });
      const event = await verifyManagedAgentWebhook(BODY, headers, secret, { nowMs: NOW_MS });
      assert.equal(event.id, "wevt_01");
      const other = secrets[(n + 1) % secrets.length];
      await rejects(
        verifyManagedAgentWebhook(BODY, headers, other, { nowMs: NOW_MS }),
        "invalidSignature",
      );
    }
  }
});

Deno.test("concurrent verifications of different bodies do not mix up their signatures", async () => {
  const bodies = Array.from({ length: 64 }, (_, n) => envelopeOfLength(200 + n * 150, "y"));
  const results = await Promise.allSettled(
    bodies.map((body, n) => {
      const headers = signedHeaders(body, { id: `msg_${n}` });
      // Every fifth delivery carries the next body's signature: it must fail, the rest pass.
      const sent = n % 5 === 0 ? bodies[(n + 1) % bodies.length] : body;
      return verifyManagedAgentWebhook(sent, headers, SECRET, { nowMs: NOW_MS });
    }),
  );
  for (const [n, result] of results.entries()) {
    if (n % 5 === 0) {
      assert.equal(result.status, "rejected", `delivery ${n}`);
      assert.equal((result as PromiseRejectedResult).reason.reason, "invalidSignature");
    } else {
      assert.equal(result.status, "fulfilled", `delivery ${n}`);
    }
  }
});
