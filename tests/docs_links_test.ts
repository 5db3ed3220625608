/**
 * Every relative link in README.md and docs/*.md resolves: the file (or folder) it names exists
 * in the checkout, and its `#anchor`, if any, names a heading of that markdown file as GitHub
 * slugs it (lowercased; punctuation but `-` and `_` dropped; each space a `-`; a repeated slug
 * gets `-1`, `-2`, …). Links inside code (fenced blocks, `code spans`) are not links and are
 * skipped; absolute links (`https:`, `mailto:`) are not checked (no network in tests). A link
 * may not leave the checkout.
 */
import assert from "node:assert/strict";
import { REPO_ROOT } from "./support/cli.ts";

const ROOT = new URL(REPO_ROOT, "file:///").pathname.replace(/\/?$/, "/");

/**
 * The text with fenced code blocks blanked out (line count kept) and code spans removed (or, with
 * `unwrap`, replaced by their text, as in a heading's anchor).
 */
function prose(markdown: string, unwrap = false): string {
  let fence: string | undefined;
  return markdown.split("\n").map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) {
        fence = undefined;
      }
      return "";
    }
    if (marker !== undefined) {
      fence = marker;
      return "";
    }
    return line.replace(/(`+)([\s\S]*?)\1/g, unwrap ? "$2" : "");
  }).join("\n");
}

/** GitHub's anchors for the headings of a markdown text. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of prose(markdown, true).matchAll(/^#{1,6}\s+(.*)$/gm)) {
    const text = heading.replace(/\s+#+\s*$/, "")
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link's text
      .replace(/<[^>]+>/g, ""); // inline HTML
    const base = text.trim().toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** The link targets of a markdown text with their line numbers (inline and reference style). */
function links(markdown: string): { target: string; line: number }[] {
  const found: { target: string; line: number }[] = [];
  prose(markdown).split("\n").forEach((text, index) => {
    for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      found.push({ target: match[1], line: index + 1 });
    }
    const reference = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(text);
    if (reference) found.push({ target: reference[1], line: index + 1 });
  });
  return found;
}

Deno.test("anchors follow GitHub's rules", () => {
  assert.deepEqual(
    [...anchors("# A `b` c\n## Runs: the gateway's part (v1)\n## A\n## a\n```\n# no\n```")],
    ["a-b-c", "runs-the-gateways-part-v1", "a", "a-1"],
  );
});

Deno.test("every relative link and anchor in README.md and docs/*.md resolves", async () => {
  const pages = ["README.md"];
  for await (const entry of Deno.readDir(`${ROOT}docs`)) {
    if (entry.isFile && entry.name.endsWith(".md")) pages.push(`docs/${entry.name}`);
  }
  const texts = new Map<string, string>();
  const read = async (path: string): Promise<string | undefined> => {
    if (!texts.has(path)) {
      try {
        texts.set(path, await Deno.readTextFile(`${ROOT}${path}`));
      } catch {
        return undefined;
      }
    }
    return texts.get(path);
  };
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages.sort()) {
    for (const { target, line } of links((await read(page))!)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // absolute: https:, mailto:
      checked++;
      const [pathPart, anchor] = target.split("#", 2);
      const base = new URL(page, "file:///repo/");
      const resolved = pathPart === "" ? base : new URL(decodeURI(pathPart), base);
      if (!resolved.pathname.startsWith("/repo/")) {
        broken.push(`${page}:${line}: ${target} leaves the repository`);
        continue;
      }
      const path = decodeURIComponent(resolved.pathname.slice("/repo/".length));
      try {
        await Deno.stat(`${ROOT}${path}`);
      } catch {
        broken.push(`${page}:${line}: ${target}: no ${path}`);
        continue;
      }
      if (anchor === undefined || anchor === "") continue;
      if (!path.endsWith(".md")) {
        if (!/^L\d+(-L\d+)?$/.test(anchor)) broken.push(`${page}:${line}: ${target}: anchor`);
        continue;
      }
      if (!anchors((await read(path))!).has(decodeURIComponent(anchor))) {
        broken.push(`${page}:${line}: ${target}: no heading #${anchor} in ${path}`);
      }
    }
  }
  assert.ok(checked > 20, `only ${checked} links found`);
  assert.deepEqual(broken, []);
});
