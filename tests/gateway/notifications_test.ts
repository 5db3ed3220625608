/**
 * Notification webhooks against the in-process gateway and a local receiver (private targets
 * allowed, as for a local bridge): deliveries verify with `npm:standardwebhooks`; a receiver
 * answering 500 twice gets the third attempt with the same `webhook-id`; the deliveries list
 * shows the attempts; redelivery sends once more; after a rotation both secrets verify; the
 * Slack format links the console; twenty failures in a row disable the subscription with an audit
 * entry; loopback, private, link-local and metadata targets are refused without the setting, and a
 * name that resolves to loopback at delivery time (DNS rebinding) gets nothing; the secret is in
 * no list, log line or audit entry, and the store holds it encrypted.
 */
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { assertCode, type Gateway, startGateway, waitFor } from "./_harness.ts";
import {
  FAST,
  gatewayWith,
  type Received,
  receiver,
  subscribe,
  subscribedRun,
} from "./_notifications.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

function askForConfirmation(gateway: Gateway): void {
  gateway.fake.managedAgents!.script = () => [
    { type: "agent.tool_use", name: "bash", input: { command: "ls" }, evaluated_permission: "ask" },
  ];
}

function headerRecord(headers: Headers): Record<string, string> {
  return {
    "webhook-id": headers.get("webhook-id")!,
    "webhook-timestamp": headers.get("webhook-timestamp")!,
    "webhook-signature": headers.get("webhook-signature")!,
  };
}

Deno.test("notifications: deliveries verify with standardwebhooks; 500 twice, then the third attempt with the same webhook-id; attempts listed; redelivery", async () => {
  const gateway = await gatewayWith();
  let failuresLeft = 2;
  const hook = receiver((received) => {
    const type = JSON.parse(received.body).type;
    if (type === "run.requires_action" && failuresLeft > 0) {
      failuresLeft--;
      return 500;
    }
    return 204;
  });
  try {
    askForConfirmation(gateway);
    const writer = await gateway.issue(["session:read", "session:write"]);
    const approver = await gateway.issue(["session:read", "session:approve"]);
    const { subscriptionId, secret, json } = await subscribe(gateway, writer.bearer, {
      url: hook.url,
      events: ["run.requires_action", "tool.answered", "run.completed"],
      description: "mine",
    });
    assert.match(secret, /^whsec_/);
    assert.equal(json.principalId, writer.principalId);
    assert.equal(json.state, "active");
    const started = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "go", title: "deploy" },
    });
    assert.equal(started.status, 201, started.text);
    const runId = started.json.runId;

    const waiting = await waitFor(() => {
      const got = hook.requests.filter((r) => JSON.parse(r.body).type === "run.requires_action");
      return got.length >= 3 ? got : undefined;
    });
    const ids = waiting.map((r) => r.headers.get("webhook-id"));
    assert.equal(new Set(ids).size, 1, "every attempt carries the delivery's id");
    const verifier = new Webhook(secret);
    const payload = verifier.verify(waiting[2].body, headerRecord(waiting[2].headers)) as Json;
    assert.equal(payload.type, "run.requires_action");
    assert.equal(payload.data.runId, runId);
    assert.equal(payload.data.title, "deploy");
    assert.equal(payload.data.principalId, writer.principalId);
    assert.deepEqual(payload.data.pending.map((p: Json) => p.name), ["bash"]);
    assert.equal(payload.data.consoleUrl, "https://runtime.example/console/");
    assert.equal(waiting[2].headers.get("content-type"), "application/json");
    assert.throws(() =>
      new Webhook(secret).verify(waiting[2].body + " ", headerRecord(waiting[2].headers))
    );

    const listed = await gateway.request(
      "GET",
      `/v1/webhook-subscriptions/${subscriptionId}/deliveries`,
      { bearer: writer.bearer },
    );
    assert.equal(listed.status, 200, listed.text);
    const delivery = listed.json.deliveries.find((d: Json) =>
      d.eventType === "run.requires_action"
    );
    assert.equal(delivery.deliveryId, ids[0]);
    await waitFor(async () => {
      const again = await gateway.request(
        "GET",
        `/v1/webhook-subscriptions/${subscriptionId}/deliveries`,
        { bearer: writer.bearer },
      );
      const found = again.json.deliveries.find((d: Json) => d.deliveryId === ids[0]);
      return found.state === "delivered" ? found : undefined;
    }).then((found: Json) => {
      assert.deepEqual(found.attempts.map((a: Json) => a.status), [500, 500, 204]);
    });

    // The answer and the run's end are delivered too, each once.
    const answer = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
      bearer: approver.bearer,
      body: { toolUseId: payload.data.pending[0].toolUseId, result: "allow" },
    });
    assert.equal(answer.status, 200, answer.text);
    const answered = await waitFor(() =>
      hook.requests.find((r) => JSON.parse(r.body).type === "tool.answered")
    );
    const answeredPayload = verifier.verify(answered.body, headerRecord(answered.headers)) as Json;
    assert.equal(answeredPayload.data.answeredBy, approver.principalId);
    assert.equal(answeredPayload.data.result, "allow");

    // Redelivery: once more, with the same id.
    const before = hook.requests.length;
    const redelivered = await gateway.request(
      "POST",
      `/v1/webhook-subscriptions/${subscriptionId}/deliveries/${ids[0]}/redeliver`,
      { bearer: writer.bearer },
    );
    assert.equal(redelivered.status, 202, redelivered.text);
    assert.equal(redelivered.json.state, "pending");
    const again = await waitFor(() =>
      hook.requests.slice(before).find((r) => r.headers.get("webhook-id") === ids[0])
    );
    assert.ok(verifier.verify(again.body, headerRecord(again.headers)));

    // Another principal: 404; the owner's list never shows the secret.
    const other = await gateway.issue(["session:read"]);
    assertCode(
      await gateway.request("GET", `/v1/webhook-subscriptions/${subscriptionId}`, {
        bearer: other.bearer,
      }),
      404,
      "notFound",
    );
    const list = await gateway.request("GET", "/v1/webhook-subscriptions", {
      bearer: writer.bearer,
    });
    assert.equal(list.json.subscriptions.length, 1);
    assert.equal(list.json.subscriptions[0].secret, undefined);
    const audit = await gateway.request("GET", "/v1/audit?action=webhook.subscribed");
    assert.equal(audit.json.entries[0].subscriptionId, subscriptionId);
    const secretText = secret.slice("whsec_".length);
    for (const text of [...gateway.logs, ...gateway.answers.map((a) => a.text)]) {
      if (text.includes('"secret"')) continue; // the answers that show it once
      assert.ok(!text.includes(secretText), "the secret leaked");
    }
    const stored = await gateway.store.notifications.getSubscription(subscriptionId);
    assert.ok(!JSON.stringify(stored).includes(secretText), "stored in the clear");
  } finally {
    await gateway.close();
    await hook.close();
  }
});

Deno.test("notifications: after a rotation both secrets verify; a replayed rotation shows the same secret; Slack bodies link the console", async () => {
  const gateway = await gatewayWith();
  const hook = receiver();
  const slack = receiver();
  try {
    const writer = await gateway.issue(["session:read", "session:write"]);
    const { subscriptionId, secret: old } = await subscribe(gateway, writer.bearer, {
      url: hook.url,
      events: ["run.completed"],
    });
    await subscribe(gateway, writer.bearer, {
      url: slack.url,
      events: ["run.completed"],
      format: "slack",
    });
    const key = crypto.randomUUID();
    const rotated = await gateway.request(
      "POST",
      `/v1/webhook-subscriptions/${subscriptionId}/rotate-secret`,
      { bearer: writer.bearer, key },
    );
    assert.equal(rotated.status, 200, rotated.text);
    assert.equal(rotated.headers.get("cache-control"), "no-store");
    const current = rotated.json.secret;
    assert.notEqual(current, old);
    const overlap = Date.parse(rotated.json.previousSecretExpiresAt) - Date.now();
    assert.ok(overlap > 23 * 3_600_000 && overlap <= 24 * 3_600_000);
    const replayed = await gateway.request(
      "POST",
      `/v1/webhook-subscriptions/${subscriptionId}/rotate-secret`,
      { bearer: writer.bearer, key },
    );
    assert.equal(replayed.headers.get("idempotent-replayed"), "true");
    assert.equal(replayed.json.secret, current);

    const started = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "hello", title: "a <b> & c" },
    });
    assert.equal(started.status, 201, started.text);
    const delivered = await waitFor(() => hook.requests[0]);
    assert.equal(delivered.headers.get("webhook-signature")!.split(" ").length, 2);
    for (const secret of [old, current]) {
      const payload = new Webhook(secret).verify(delivered.body, headerRecord(delivered.headers));
      assert.equal((payload as Json).type, "run.completed");
    }
    const text = JSON.parse((await waitFor(() => slack.requests[0])).body).text;
    assert.match(text, /Run "a &lt;b&gt; &amp; c" \(sesn_[^)]+\) completed/);
    assert.match(text, /<https:\/\/runtime\.example\/console\/\|Open the console>/);
  } finally {
    await gateway.close();
    await hook.close();
    await slack.close();
  }
});

Deno.test("notifications: twenty failed attempts in a row disable the subscription, with an audit entry", async () => {
  const gateway = await gatewayWith({
    answerTestHooks: { notifications: { retryDelaysMs: [1], pollMs: 20 } },
  });
  const hook = receiver(() => 500);
  try {
    const writer = await gateway.issue(["session:read", "session:write"]);
    const subscriptionId = await subscribedRun(gateway, writer.bearer, hook.url);
    const disabled = await waitFor(async () => {
      const read = await gateway.request("GET", `/v1/webhook-subscriptions/${subscriptionId}`, {
        bearer: writer.bearer,
      });
      return read.json.state === "disabled" ? read.json : undefined;
    }, 20_000);
    assert.equal(disabled.consecutiveFailures, 20);
    assert.equal(typeof disabled.disabledAt, "string");
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(hook.requests.length, 20, "no attempt after the disabling");
    const audit = await gateway.request("GET", "/v1/audit?action=webhook.disabled");
    assert.equal(audit.json.entries.length, 1);
    assert.equal(audit.json.entries[0].subscriptionId, subscriptionId);
    assert.equal(audit.json.entries[0].actorId, "runtime");
    const deliveries = await gateway.request(
      "GET",
      `/v1/webhook-subscriptions/${subscriptionId}/deliveries`,
      { bearer: writer.bearer },
    );
    const [delivery] = deliveries.json.deliveries;
    assertCode(
      await gateway.request(
        "POST",
        `/v1/webhook-subscriptions/${subscriptionId}/deliveries/${delivery.deliveryId}/redeliver`,
        { bearer: writer.bearer },
      ),
      409,
      "webhookSubscriptionDisabled",
    );
  } finally {
    await gateway.close();
    await hook.close();
  }
});

Deno.test("notifications: loopback, private, link-local and metadata targets are refused without the setting; a name rebound to loopback gets nothing", async () => {
  let rebound = false;
  const gateway = await startGateway({
    answerTestHooks: {
      notifications: {
        retryDelaysMs: [30_000],
        pollMs: 50,
        resolve: (name) =>
          Promise.resolve(name === "hooks.example" && !rebound ? ["93.184.215.14"] : ["127.0.0.1"]),
      },
    },
  });
  const hook = receiver();
  try {
    const writer = await gateway.issue(["session:read", "session:write"]);
    for (
      const url of [
        hook.url,
        "http://localhost:9/x",
        "http://10.1.2.3/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/x",
        "http://[::ffff:192.168.1.1]/x",
        "http://[::ffff:0:7f00:1]/x",
        "http://[2002:a9fe:a9fe::1]/latest/meta-data",
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x",
        "http://[64:ff9b:1::a00:1]/x",
        "http://203.0.113.7/x",
        "http://metadata.google.internal/x",
        "https://loops.example/x",
      ]
    ) {
      const refused = await gateway.request("POST", "/v1/webhook-subscriptions", {
        bearer: writer.bearer,
        body: { url, events: ["run.completed"] },
      });
      assertCode(refused, 422, "webhookTargetNotAllowed");
    }
    assertCode(
      await gateway.request("POST", "/v1/webhook-subscriptions", {
        bearer: writer.bearer,
        body: { url: "https://user:pw@hooks.example/x", events: ["run.completed"] },
      }),
      422,
      "invalidRequest",
    );
    const { subscriptionId } = await subscribe(gateway, writer.bearer, {
      url: `http://hooks.example:${new URL(hook.url).port}/hook`,
      events: ["run.completed"],
    });
    rebound = true;
    const started = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "x" },
    });
    assert.equal(started.status, 201, started.text);
    const attempt = await waitFor(async () => {
      const listed = await gateway.request(
        "GET",
        `/v1/webhook-subscriptions/${subscriptionId}/deliveries`,
        { bearer: writer.bearer },
      );
      return listed.json.deliveries[0]?.attempts[0];
    });
    assert.match(attempt.error, /^refused: /);
    assert.equal(attempt.status, undefined);
    assert.equal(hook.requests.length, 0);
  } finally {
    await gateway.close();
    await hook.close();
  }
});

/** `openssl`, or null when it is missing (CI has it: the nginx test needs it too). */
async function openssl(): Promise<string | null> {
  try {
    const { success } = await new Deno.Command("openssl", { args: ["version"], stdout: "null" })
      .output();
    return success ? "openssl" : null;
  } catch {
    return null;
  }
}

/** A certificate and key for `name`, self-signed (made with `openssl`). */
async function certificateFor(tool: string, name: string): Promise<{ cert: string; key: string }> {
  const dir = await Deno.makeTempDir({ prefix: "art-hook-tls-" });
  try {
    const { success, stderr } = await new Deno.Command(tool, {
      args: [
        ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
        ...["-keyout", `${dir}/key.pem`, "-out", `${dir}/cert.pem`, "-days", "2"],
        ...["-subj", `/CN=${name}`, "-addext", `subjectAltName=DNS:${name}`],
        ...["-addext", "basicConstraints=critical,CA:FALSE"],
        ...["-addext", "extendedKeyUsage=serverAuth"],
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.ok(success, new TextDecoder().decode(stderr));
    return {
      cert: await Deno.readTextFile(`${dir}/cert.pem`),
      key: await Deno.readTextFile(`${dir}/key.pem`),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("notifications: an attempt connects to the address the check resolved, never resolving the name again (http and https)", async () => {
  // `.invalid` never resolves on any real resolver (RFC 6761): a delivery reaches the receiver
  // only by connecting to the address the target check got from the seam. A second lookup (the
  // one a DNS rebinding answers differently) would find nothing.
  const name = "pinned.invalid";
  const tool = await openssl();
  if (tool === null && Deno.env.get("CI")) throw new Error("CI must have openssl");
  const tls = tool === null ? null : await certificateFor(tool, name);
  const hosts: string[] = [];
  const bodies: Received[] = [];
  const handler = async (request: Request) => {
    hosts.push(request.headers.get("host") ?? "");
    bodies.push({ headers: request.headers, body: await request.text(), at: performance.now() });
    return new Response(null, { status: 204 });
  };
  const plain = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  const secure = tls === null
    ? null
    : Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {}, ...tls }, handler);
  const lookups: string[] = [];
  const gateway = await gatewayWith({
    answerTestHooks: {
      notifications: {
        ...FAST.notifications,
        resolve: (host) => {
          lookups.push(host);
          return Promise.resolve(host === name ? ["127.0.0.1"] : []);
        },
        ...(tls !== null ? { caCerts: [tls.cert] } : {}),
      },
    },
  });
  try {
    const writer = await gateway.issue(["session:read", "session:write"]);
    const targets = [`http://${name}:${plain.addr.port}/hook?q=1`];
    if (secure !== null) targets.push(`https://${name}:${secure.addr.port}/hook`);
    else console.error("notifications_test: the https target is skipped (no openssl)");
    const secrets: string[] = [];
    for (const url of targets) {
      secrets.push(
        (await subscribe(gateway, writer.bearer, { url, events: ["run.completed"] }))
          .secret,
      );
    }
    const started = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "go" },
    });
    assert.equal(started.status, 201, started.text);
    await waitFor(() => bodies.length >= targets.length ? true : undefined);
    assert.deepEqual(
      hosts.toSorted(),
      targets.map((url) => new URL(url).host).toSorted(),
      "each request names the target's host, as a fetch would",
    );
    for (const received of bodies) {
      const verified = secrets.some((secret) => {
        try {
          new Webhook(secret).verify(received.body, headerRecord(received.headers));
          return true;
        } catch {
          return false;
        }
      });
      assert.ok(verified, "the delivery verifies with its subscription's secret");
    }
    assert.ok(lookups.every((host) => host === name), "only the seam resolved the name");
  } finally {
    await gateway.close();
    await plain.shutdown();
    await secure?.shutdown();
  }
});

Deno.test("notifications: an interim 1xx answer is skipped for the final status; an answer that is not HTTP fails the attempt", async () => {
  /** A TCP receiver that reads a request's head and answers `reply` as it is. */
  function raw(reply: string) {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const served = (async () => {
      for await (const conn of listener) {
        try {
          const buffer = new Uint8Array(65_536);
          let text = "";
          while (!text.includes("\r\n\r\n")) {
            const read = await conn.read(buffer);
            if (read === null) break;
            text += new TextDecoder().decode(buffer.subarray(0, read));
          }
          await conn.write(new TextEncoder().encode(reply));
        } catch {
          // The sender went away.
        } finally {
          conn.close();
        }
      }
    })();
    return {
      url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/hook`,
      close: async () => {
        listener.close();
        await served.catch(() => {});
      },
    };
  }
  const interim = raw(
    "HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\nHTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n",
  );
  const garbage = raw("SSH-2.0-OpenSSH_9.6\r\n\r\n");
  const gateway = await gatewayWith();
  try {
    const writer = await gateway.issue(["session:read", "session:write"]);
    const ids = [];
    for (const hook of [interim, garbage]) {
      ids.push(
        (await subscribe(gateway, writer.bearer, {
          url: hook.url,
          events: ["run.completed"],
        })).subscriptionId,
      );
    }
    const started = await gateway.request("POST", "/v1/runs", {
      bearer: writer.bearer,
      body: { input: "go" },
    });
    assert.equal(started.status, 201, started.text);
    const attempts = await Promise.all(
      ids.map((id) =>
        waitFor(async () =>
          (await gateway.request("GET", `/v1/webhook-subscriptions/${id}/deliveries`, {
            bearer: writer.bearer,
          })).json.deliveries[0]?.attempts[0]
        )
      ),
    );
    assert.equal(attempts[0].status, 202, JSON.stringify(attempts[0]));
    assert.equal(attempts[1].status, undefined);
    assert.equal(attempts[1].error, "connection failed");
  } finally {
    await gateway.close();
    await interim.close();
    await garbage.close();
  }
});

Deno.test("notifications: a revoked owner's pending deliveries get no further attempt", async () => {
  const hook = receiver(() => 500);
  const gateway = await gatewayWith();
  try {
    const writer = await gateway.issue(["session:read", "session:write"]);
    const subscriptionId = await subscribedRun(gateway, writer.bearer, hook.url);
    await waitFor(() => hook.requests.length >= 1 ? true : undefined);
    const revoked = await gateway.request("DELETE", `/v1/principals/${writer.principalId}`);
    assert.equal(revoked.status, 204, revoked.text);
    const sent = hook.requests.length;
    // Retries come every 40 ms here: a few would have come by now.
    const delivery = await waitFor(async () => {
      const listed = await gateway.request(
        "GET",
        `/v1/webhook-subscriptions/${subscriptionId}/deliveries`,
      );
      const found = listed.json.deliveries[0];
      return found?.state === "failed" ? found : undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(hook.requests.length <= sent + 1, "at most the attempt under way went on");
    assert.equal(delivery.attempts.at(-1).error, "owner revoked or expired");
  } finally {
    await gateway.close();
    await hook.close();
  }
});
