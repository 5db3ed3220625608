/**
 * The web console in headless Chromium (Debian's, driven by `playwright-core`), against the
 * runtime in front of the in-process fake provider, served over HTTP on a loopback port. One
 * browser for the file, one isolated context per person:
 *
 * - Alice and Bob, approvers, each sign in on a console; a run a writer starts meanwhile through
 *   the API shows its pending confirmation in both inboxes without a reload; Alice's "Allow"
 *   sends exactly one confirmation to the provider, the item leaves both consoles within 2 s, and
 *   the run page shows the answer with Alice's name;
 * - "Deny" with a reason reaches the provider as the deny message;
 * - Alice and Bob answering the same request at once: one answer reaches the provider, the other
 *   console says "Already answered";
 * - a writer without `session:approve` sees its run's confirmation without Allow or Deny;
 * - the tool input holds `<img src=x onerror=…>` and `<script>`: shown as text, nothing runs;
 * - the bearer is in no URL, cookie or `localStorage` entry and in no request but the API's
 *   (`sessionStorage` only when "Keep signed in for this tab" is ticked, forgotten on sign-out);
 * - every console answer carries the Content Security Policy, and the page breaks none of it;
 * - signing in and answering work with the keyboard alone, and every control has an accessible
 *   name (Chromium's own accessibility tree says so).
 *
 * The run writes the screenshots of `docs/console.md` into `docs/images/` (overwritten each run).
 */
import assert from "node:assert/strict";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { type Gateway, startGateway } from "../gateway/_harness.ts";
import { CHROMIUM, CHROMIUM_FLAGS, HAS_CHROMIUM } from "../support/chromium.ts";

const IMAGES = new URL("../../docs/images/", import.meta.url);
const DAY = 86_400_000;
/** What a tool asks to run: markup that would run script if it were ever parsed as HTML. */
const HOSTILE = {
  command: "cat notes.txt",
  note:
    `<img src=x onerror="globalThis.__xss = 'img'"><script>globalThis.__xss = 'script'</script>`,
};

// deno-lint-ignore no-explicit-any
type Json = any;

interface Person {
  name: string;
  bearer: string;
  principalId: string;
  context: BrowserContext;
  page: Page;
}

/** Every request a context's pages sent, with all its headers. */
interface SentRequest {
  url: string;
  headers: Record<string, string>;
}

async function issue(gateway: Gateway, name: string, capabilities: string[]) {
  const principalId = crypto.randomUUID();
  const answer = await gateway.request("POST", "/v1/principals", {
    body: {
      principalId,
      name,
      capabilities,
      expiresAt: new Date(Date.now() + DAY).toISOString(),
    },
  });
  assert.equal(answer.status, 201, answer.text);
  return { bearer: answer.json.bearer as string, principalId };
}

async function startRun(gateway: Gateway, bearer: string, title: string): Promise<string> {
  const answer = await gateway.request("POST", "/v1/runs", {
    bearer,
    body: { input: "go", title },
  });
  assert.equal(answer.status, 201, answer.text);
  return answer.json.runId;
}

/** The confirmations the fake provider received for a run. */
function confirmations(gateway: Gateway, runId: string): Json[] {
  return gateway.fake.managedAgents!.sessions.get(runId)!.events.filter((event: Json) =>
    event.type === "user.tool_confirmation"
  );
}

/** The inbox item of a run, by its title. */
function item(page: Page, title: string) {
  return page.locator("li.request", { hasText: title });
}

async function signIn(page: Page, bearer: string, options: { keep?: boolean } = {}) {
  await page.getByLabel("Bearer token").fill(bearer);
  if (options.keep) await page.getByLabel("Keep signed in for this tab").check();
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "Sign out" }).waitFor();
}

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: new URL(name, IMAGES).pathname, fullPage: true });
}

/** The controls in Chromium's accessibility tree that have no name. */
async function unnamedControls(context: BrowserContext, page: Page): Promise<string[]> {
  const session = await context.newCDPSession(page);
  try {
    const { nodes } = await session.send("Accessibility.getFullAXTree") as Json;
    const controls = new Set(["button", "link", "textbox", "checkbox", "combobox", "listbox"]);
    return nodes
      .filter((node: Json) => !node.ignored && controls.has(node.role?.value))
      .filter((node: Json) => String(node.name?.value ?? "").trim() === "")
      .map((node: Json) => `${node.role.value} without a name`);
  } finally {
    await session.detach();
  }
}

/**
 * A TCP relay in front of the service whose open connections can be cut at once, as a network
 * drop does: the browser's streams break, and new connections go through again.
 */
function droppingRelay(target: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  const close = (conn: Deno.Conn) => {
    open.delete(conn);
    try {
      conn.close();
    } catch {
      // Already closed.
    }
  };
  (async () => {
    for await (const conn of listener) {
      Deno.connect({ hostname: "127.0.0.1", port: target }).then((upstream) => {
        open.add(conn);
        open.add(upstream);
        Promise.allSettled([
          conn.readable.pipeTo(upstream.writable),
          upstream.readable.pipeTo(conn.writable),
        ]).then(() => [conn, upstream].forEach(close));
      }, () => close(conn));
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    cut: () => [...open].forEach(close),
    close() {
      listener.close();
      [...open].forEach(close);
    },
  };
}

Deno.test({
  name: "console: approvers answer from the inbox in a real browser, safely",
  ignore: !HAS_CHROMIUM,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const gateway = await startGateway();
    gateway.fake.managedAgents!.script = () => [
      { type: "agent.tool_use", name: "bash", input: HOSTILE, evaluated_permission: "ask" },
    ];
    const http = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (request) => gateway.server.handler(request),
    );
    // The browser reaches the service through a relay the test can cut.
    const relay = droppingRelay(http.addr.port);
    const origin = `http://127.0.0.1:${relay.port}`;
    const writer = await issue(gateway, "Wendy Writer", ["session:read", "session:write"]);
    const bearers = [gateway.admin, writer.bearer];
    const requests: SentRequest[] = [];
    const pending: Promise<void>[] = [];
    const consoleAnswers: { url: string; status: number; csp: string | undefined }[] = [];
    const problems: string[] = [];
    let browser: Browser | null = null;
    try {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        timeout: 30_000,
        // Playwright adds a fresh --user-data-dir of its own for each launch.
        args: [...CHROMIUM_FLAGS],
      });
      const open = async (name: string, bearer: string, principalId: string) => {
        const context = await browser!.newContext({ viewport: { width: 1100, height: 760 } });
        context.setDefaultTimeout(10_000);
        context.on("request", (request) => {
          pending.push(
            request.allHeaders().then((headers) => {
              requests.push({ url: request.url(), headers });
            }, () => {}),
          );
        });
        context.on("response", (response) => {
          if (new URL(response.url()).pathname.startsWith("/console")) {
            consoleAnswers.push({
              url: response.url(),
              status: response.status(),
              csp: response.headers()["content-security-policy"],
            });
          }
        });
        const page = await context.newPage();
        page.on("pageerror", (error) => problems.push(`${name}: ${error.message}`));
        page.on("dialog", (dialog) => {
          problems.push(`${name}: a dialog opened: ${dialog.message()}`);
          dialog.dismiss().catch(() => {});
        });
        page.on("console", (message) => {
          if (/Content.Security.Policy|Trusted Type/i.test(message.text())) {
            problems.push(`${name}: ${message.text()}`);
          }
        });
        await page.goto(`${origin}/console/`);
        return { name, bearer, principalId, context, page } satisfies Person;
      };

      const aliceId = await issue(gateway, "Alice Approver", ["session:read", "session:approve"]);
      const bobId = await issue(gateway, "Bob Approver", ["session:read", "session:approve"]);
      bearers.push(aliceId.bearer, bobId.bearer);
      const alice = await open("Alice", aliceId.bearer, aliceId.principalId);
      const bob = await open("Bob", bobId.bearer, bobId.principalId);

      await t.step("an approver signs in with the keyboard alone", async () => {
        await screenshot(alice.page, "console-sign-in.png");
        // The field has the focus when the page opens.
        await alice.page.keyboard.type(alice.bearer);
        await alice.page.keyboard.press("Tab"); // "Keep signed in for this tab"
        await alice.page.keyboard.press("Tab"); // "Sign in"
        await alice.page.keyboard.press("Enter");
        await alice.page.getByText("Signed in as Alice Approver").waitFor();
        await signIn(bob.page, bob.bearer);
        assert.deepEqual(await unnamedControls(alice.context, alice.page), []);
      });

      let firstRun = "";
      await t.step("a run started meanwhile shows its confirmation without a reload", async () => {
        const loads = { alice: 0 };
        alice.page.on("load", () => loads.alice++);
        firstRun = await startRun(gateway, writer.bearer, "Deploy the docs site");
        await item(alice.page, "Deploy the docs site").waitFor();
        await item(bob.page, "Deploy the docs site").waitFor();
        assert.equal(loads.alice, 0, "the page was not reloaded");
        const text = await item(alice.page, "Deploy the docs site").innerText();
        for (const part of ["bash", "Wendy Writer", "Deploy the docs site", gateway.agentId]) {
          assert.ok(text.includes(part), `the item shows ${part}: ${text}`);
        }
        // The fail-closed deny is 10 minutes after the request.
        assert.match(text, /Denied automatically in\s+(9 min|10 min 00 s)/);
        assert.deepEqual(await unnamedControls(alice.context, alice.page), []);
        await screenshot(alice.page, "console-inbox.png");
      });

      await t.step("the tool input renders as text and runs nothing", async () => {
        const shown = await item(alice.page, "Deploy the docs site").locator("pre.input")
          .textContent();
        assert.ok(shown?.includes(`<img src=x onerror=\\"globalThis.__xss = 'img'\\">`), shown!);
        assert.ok(shown?.includes("<script>globalThis.__xss = 'script'</script>"), shown!);
        assert.equal(await alice.page.locator("main img, main script").count(), 0);
        assert.equal(await alice.page.evaluate(() => (globalThis as Json).__xss), undefined);
      });

      await t.step("Allow: one confirmation, the item leaves every console", async () => {
        await item(alice.page, "Deploy the docs site").getByRole("button", { name: "Allow" })
          .focus();
        await alice.page.keyboard.press("Enter");
        await item(alice.page, "Deploy the docs site").waitFor({ state: "detached" });
        const answeredAt = Date.now();
        await item(bob.page, "Deploy the docs site").waitFor({ state: "detached" });
        const left = Date.now() - answeredAt;
        assert.ok(left <= 2_000, `the item left Bob's console after ${left} ms`);
        const sent = confirmations(gateway, firstRun);
        assert.equal(sent.length, 1);
        assert.equal(sent[0].result, "allow");
      });

      await t.step("the run page shows the answer with the approver's name", async () => {
        await alice.page.getByRole("link", { name: "Runs", exact: true }).click();
        await alice.page.getByRole("link", { name: "Deploy the docs site" }).click();
        await alice.page.getByText("Allowed by Alice Approver").waitFor();
        await alice.page.getByText("Turn completed").waitFor();
        await screenshot(alice.page, "console-run.png");
        // A reload forgets a bearer that was not kept for the tab.
        await bob.page.goto(`${origin}/console/#/runs/${encodeURIComponent(firstRun)}`);
        await bob.page.reload();
        await bob.page.getByRole("button", { name: "Sign in" }).waitFor();
      });

      await t.step("the run page resumes after a dropped connection, nothing twice", async () => {
        gateway.fake.managedAgents!.continuation = () => [
          { type: "agent.message", content: [{ type: "text", text: "Finished after the drop" }] },
        ];
        const runId = await startRun(gateway, writer.bearer, "Survive a network drop");
        await alice.page.goto(`${origin}/console/#/runs/${encodeURIComponent(runId)}`);
        await alice.page.getByText("Tool call: bash").waitFor();
        await alice.page.locator(".connection", { hasText: "Live" }).waitFor();
        relay.cut();
        await alice.page.locator(".connection", { hasText: "reconnecting" }).waitFor();
        // The run goes on while the page is cut off.
        const { json } = await gateway.request("GET", `/v1/runs/${runId}/pending`);
        const answer = await gateway.request("POST", `/v1/runs/${runId}/tool-confirmations`, {
          body: { toolUseId: json.pending[0].toolUseId, result: "allow" },
        });
        assert.equal(answer.status, 200, answer.text);
        await alice.page.getByText("Finished after the drop").waitFor();
        await alice.page.getByText(`Allowed by ${gateway.adminId}`).waitFor();
        const events = alice.page.locator("ol.timeline > li");
        assert.equal(await events.filter({ hasText: "Run started" }).count(), 1);
        assert.equal(await events.filter({ hasText: "Tool call: bash" }).count(), 1);
        assert.equal(await events.filter({ hasText: "Finished after the drop" }).count(), 1);
        await alice.page.getByRole("link", { name: /^Inbox/ }).click();
      });

      await t.step("Deny with a reason reaches the provider as the deny message", async () => {
        const runId = await startRun(gateway, writer.bearer, "Rotate the keys");
        const request = item(alice.page, "Rotate the keys");
        await request.getByRole("button", { name: "Deny" }).click();
        await request.getByLabel("Reason (optional)").fill("Not during the release freeze");
        await screenshot(alice.page, "console-deny.png");
        await request.getByRole("button", { name: "Send deny" }).click();
        await request.waitFor({ state: "detached" });
        const sent = confirmations(gateway, runId);
        assert.equal(sent.length, 1);
        assert.equal(sent[0].result, "deny");
        assert.equal(sent[0].deny_message, "Not during the release freeze");
      });

      await t.step("two consoles answer at once: one answer, the other is told", async () => {
        // Bob signed in again after reloading his console (his bearer was in memory only).
        await signIn(bob.page, bob.bearer);
        await bob.page.getByRole("link", { name: /^Inbox/ }).click();
        const runId = await startRun(gateway, writer.bearer, "Migrate the database");
        const buttons = await Promise.all([alice, bob].map(async (person) => {
          const found = item(person.page, "Migrate the database");
          await found.waitFor();
          return await found.getByRole("button", { name: "Allow" }).elementHandle();
        }));
        // Both press at the same moment (a click on an item the feed is taking away counts).
        await Promise.all(buttons.map((button) => button!.evaluate((b) => (b as Json).click())));
        const told = await Promise.any(
          [alice, bob].map(async (person) => {
            await person.page.locator(".notice", {
              hasText: 'Already answered: bash in run "Migrate the database"',
            }).waitFor();
            return person.name;
          }),
        );
        for (const person of [alice, bob]) {
          await item(person.page, "Migrate the database").waitFor({ state: "detached" });
        }
        const sent = confirmations(gateway, runId);
        assert.equal(sent.length, 1, "exactly one answer reached the provider");
        const notice = await (told === "Alice" ? alice : bob).page.locator(".notice").innerText();
        const winner = told === "Alice" ? "Bob Approver" : "Alice Approver";
        assert.ok(notice.includes(`was allowed by ${winner}`), notice);
      });

      await t.step("a writer without session:approve sees no Allow or Deny", async () => {
        const wendy = await open("Wendy", writer.bearer, writer.principalId);
        await signIn(wendy.page, writer.bearer);
        const runId = await startRun(gateway, writer.bearer, "Tidy the backlog");
        const own = item(wendy.page, "Tidy the backlog");
        await own.getByText("Waiting for an approver").waitFor();
        assert.equal(await own.getByRole("button", { name: "Allow" }).count(), 0);
        assert.equal(await own.getByRole("button", { name: "Deny" }).count(), 0);
        await wendy.page.goto(`${origin}/console/#/runs/${encodeURIComponent(runId)}`);
        await wendy.page.locator(".pending li.request").waitFor();
        assert.equal(await wendy.page.getByRole("button", { name: "Allow" }).count(), 0);
        assert.equal(
          await wendy.page.getByRole("link", { name: "Audit log" }).count(),
          0,
          "no audit log for a non-admin",
        );
        assert.equal(confirmations(gateway, runId).length, 0);
        await wendy.context.close();
      });

      await t.step(
        "an admin keeps signed in for the tab, reads the audit log, signs out",
        async () => {
          const admin = await open("admin", gateway.admin, gateway.adminId);
          await signIn(admin.page, gateway.admin, { keep: true });
          const kept = await admin.page.evaluate(() => Object.values(sessionStorage));
          assert.deepEqual(kept, [gateway.admin]);
          await admin.page.reload();
          await admin.page.getByRole("button", { name: "Sign out" }).waitFor();
          await admin.page.getByRole("link", { name: "Audit log" }).click();
          await admin.page.getByRole("cell", { name: "tool.confirmed" }).first().waitFor();
          assert.deepEqual(await unnamedControls(admin.context, admin.page), []);
          await screenshot(admin.page, "console-audit.png");
          await admin.page.getByRole("button", { name: "Sign out" }).click();
          await admin.page.getByLabel("Bearer token").waitFor();
          assert.equal(await admin.page.evaluate(() => sessionStorage.length), 0);
          await admin.page.reload();
          await admin.page.getByRole("button", { name: "Sign in" }).waitFor();
          await admin.context.close();
        },
      );

      await t.step(
        "the bearer is in no URL, cookie, localStorage entry or other request",
        async () => {
          await Promise.all(pending);
          assert.ok(requests.length > 20, `only ${requests.length} requests seen`);
          let withBearer = 0;
          for (const request of requests) {
            for (const bearer of bearers) {
              assert.ok(!request.url.includes(bearer), `a bearer in ${request.url}`);
              const carrying = Object.entries(request.headers).filter(([, value]) =>
                value.includes(bearer)
              );
              if (carrying.length === 0) continue;
              withBearer++;
              assert.ok(request.url.startsWith(`${origin}/v1/`), `a bearer sent to ${request.url}`);
              assert.deepEqual(carrying, [["authorization", `Bearer ${bearer}`]]);
            }
          }
          assert.ok(withBearer > 10, `only ${withBearer} API calls seen`);
          for (const person of [alice, bob]) {
            assert.deepEqual(await person.context.cookies(), []);
            const stored = await person.page.evaluate(() => ({
              local: JSON.stringify(localStorage),
              session: JSON.stringify(sessionStorage),
              url: location.href,
            }));
            assert.deepEqual(stored.local, "{}");
            assert.deepEqual(stored.session, "{}", "not kept: the box was not ticked");
            assert.ok(!bearers.some((bearer) => stored.url.includes(bearer)));
          }
        },
      );

      await t.step("every console answer carries the CSP, and the page breaks none of it", () => {
        assert.ok(consoleAnswers.length >= 10, `${consoleAnswers.length} console answers`);
        for (const answer of consoleAnswers) {
          assert.ok(
            answer.csp?.includes("default-src 'self'") &&
              answer.csp.includes("frame-ancestors 'none'") &&
              !answer.csp.includes("unsafe-inline"),
            `${answer.url} (${answer.status}): ${answer.csp}`,
          );
        }
        assert.deepEqual(problems, []);
      });
    } finally {
      await browser?.close();
      relay.close();
      await http.shutdown();
      await gateway.close();
    }
  },
});
