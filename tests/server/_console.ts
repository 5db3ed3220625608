/**
 * What every server of the runtime answers under `/console`, checked over HTTP against a running
 * one (`serve`, the Deploy-style entry): the page, a versioned file, the redirect, a 304, a wrong
 * version, a wrong method and an unknown path, each with the console's Content Security Policy.
 *
 * @module
 */
import assert from "node:assert/strict";

/** The console's security headers, as every console answer must carry them. */
export function assertConsoleHeaders(response: Response, what: string): void {
  const csp = response.headers.get("content-security-policy") ?? "";
  for (const part of ["default-src 'self'", "frame-ancestors 'none'", "form-action 'none'"]) {
    assert.ok(csp.includes(part), `${what}: CSP without ${part}: ${csp}`);
  }
  assert.ok(!csp.includes("unsafe-inline") && !csp.includes("unsafe-eval"), `${what}: ${csp}`);
  assert.equal(response.headers.get("x-content-type-options"), "nosniff", what);
  assert.equal(response.headers.get("x-frame-options"), "DENY", what);
  assert.equal(response.headers.get("referrer-policy"), "no-referrer", what);
}

/** Checks the console's answers of the server at `base` (such as `http://127.0.0.1:8000`). */
export async function assertServesConsole(base: string): Promise<void> {
  const page = await fetch(`${base}/console/`);
  const html = await page.text();
  assert.equal(page.status, 200, html);
  assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
  assert.equal(page.headers.get("cache-control"), "no-cache");
  assertConsoleHeaders(page, "the page");
  const version = html.match(/\.\/([0-9a-f]{16})\/app\.js/)?.[1];
  assert.ok(version !== undefined, "the page names its files' version");

  const again = await fetch(`${base}/console/`, {
    headers: { "if-none-match": page.headers.get("etag")! },
  });
  assert.equal(again.status, 304);
  assert.equal(await again.text(), "");
  assertConsoleHeaders(again, "the 304");

  const files: [string, string][] = [["app.js", "text/javascript"], ["console.css", "text/css"]];
  for (const [file, type] of files) {
    const answer: Response = await fetch(`${base}/console/${version}/${file}`);
    assert.equal(answer.status, 200, file);
    assert.ok(answer.headers.get("content-type")?.startsWith(type), file);
    assert.equal(answer.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.ok((await answer.text()).length > 100, file);
    assertConsoleHeaders(answer, file);
  }

  const moved = await fetch(`${base}/console`, { redirect: "manual" });
  await moved.body?.cancel();
  assert.equal(moved.status, 308);
  assert.equal(moved.headers.get("location"), "console/");
  assertConsoleHeaders(moved, "the redirect");

  const refusals: [string, RequestInit, number][] = [
    [`/console/0000000000000000/app.js`, {}, 404],
    [`/console/${version}/nothing.js`, {}, 404],
    [`/console/a/b/c`, {}, 404],
    [`/console/`, { method: "POST", body: "{}" }, 405],
  ];
  for (const [path, init, status] of refusals) {
    const answer = await fetch(`${base}${path}`, init);
    const body = await answer.json();
    assert.equal(answer.status, status, path);
    assert.equal(body.error.code, status === 404 ? "notFound" : "methodNotAllowed");
    assertConsoleHeaders(answer, `${init.method ?? "GET"} ${path}`);
  }
}
