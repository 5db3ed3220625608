/**
 * The web console's files and how the service answers them: `serve` serves `/console/` (the
 * Deploy-style entry is checked in `deploy_test.ts` with the same checks), every file of
 * `server/console/` is embedded (a new file must be added to `_assets.ts`, or this fails), and
 * the files keep the policy the page is served under: no inline script, style or event handler,
 * no address outside the service, no HTML parsed from a string.
 */
import assert from "node:assert/strict";
import { consoleAssets } from "../../server/console/_assets.ts";
import { startServer } from "../support/server.ts";
import { assertServesConsole } from "./_console.ts";

const FOLDER = new URL("../../server/console/", import.meta.url);

Deno.test("console: serve answers the page, its files and its refusals under the CSP", async () => {
  const server = await startServer();
  try {
    await assertServesConsole(server.url);
  } finally {
    await server.stop();
  }
});

Deno.test("console: every file of server/console/ is embedded and named by the page", async () => {
  const assets = consoleAssets();
  const page = new TextDecoder().decode(assets.page.body);
  const onDisk: string[] = [];
  for await (const entry of Deno.readDir(FOLDER)) {
    if (entry.isFile && !entry.name.endsWith(".ts") && entry.name !== "index.html") {
      onDisk.push(entry.name);
    }
  }
  assert.deepEqual([...assets.files.keys()].sort(), onDisk.sort());
  for (const [name, file] of assets.files) {
    const text = await Deno.readTextFile(new URL(name, FOLDER));
    assert.equal(new TextDecoder().decode(file.body), text, `${name} is embedded as it is`);
  }
  // The entry module, the style sheet and the icon are linked; the other modules are imported.
  for (const name of ["app.js", "console.css", "icon.svg"]) {
    assert.ok(page.includes(`./${assets.version}/${name}`), name);
  }
  assert.ok(!page.includes("{{"), "every placeholder is filled");
});

Deno.test("console: no inline script, style or handler, no other origin, no HTML from strings", () => {
  const assets = consoleAssets();
  const page = new TextDecoder().decode(assets.page.body);
  for (const tag of page.match(/<script\b[^>]*>/g) ?? []) {
    assert.ok(/\bsrc=/.test(tag) || /type="application\/json"/.test(tag), tag);
  }
  assert.doesNotMatch(page, /\sstyle=|\son[a-z]+=|<style/i);
  const config = JSON.parse(page.match(/id="console-config">([\s\S]*?)<\/script>/)![1]);
  assert.equal(typeof config.interfaceVersion, "string");
  for (const [name, file] of [["index.html", assets.page], ...assets.files] as const) {
    const text = new TextDecoder().decode(file.body);
    assert.doesNotMatch(text, /https?:\/\/(?!www\.w3\.org\/2000\/svg)/, `${name}: another origin`);
    assert.doesNotMatch(text, /@import|url\(/, `${name}: a fetched resource`);
    if (name.endsWith(".js")) {
      assert.doesNotMatch(
        text,
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/,
        `${name}: HTML or code from a string`,
      );
      assert.doesNotMatch(text, /localStorage|document\.cookie/, `${name}: persistent storage`);
    }
  }
});
