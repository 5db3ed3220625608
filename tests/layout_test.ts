/**
 * The import rules of the source folders (`docs/design.md`, "One wire contract" and "Internal
 * files"), checked on every import of `client/`, `sdk/`, `wire/`, `npm/`, `server/`, `cli/` and
 * `testing/`:
 *
 * - a `_` file is imported only from its own folder;
 * - `client/` imports nothing of `server/`, `sdk/` or `wire/`, and `sdk/` nothing of `server/`;
 * - `wire/` imports only itself and the run contract (`client/contract.ts`);
 * - `client/`, `sdk/`, `wire/` and `npm/` (the npm package's root) use no `Deno.*` and import no
 *   `node:` module, so they run in browsers and Node (the Node bundle tests and the npm package
 *   test run them there);
 * - `testing/` (the provider simulator) imports only itself, uses no `Deno.*`, and imports a
 *   `node:` module only in its serving helper `testing/_listen.ts`, so it runs in Deno and Node.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
const FOLDERS = ["client", "sdk", "wire", "npm", "server", "cli", "testing"];

/** `_` files imported from another folder, with the reason; none today. Never grow it. */
const PENDING: ReadonlySet<string> = new Set<string>([]);

interface SourceFile {
  /** Path from the repository root, such as `sdk/runs.ts`. */
  path: string;
  text: string;
}

async function sources(folder: string): Promise<SourceFile[]> {
  const found: SourceFile[] = [];
  async function walk(dir: string): Promise<void> {
    for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else if (entry.name.endsWith(".ts")) {
        found.push({ path, text: await Deno.readTextFile(new URL(path, ROOT)) });
      }
    }
  }
  await walk(folder);
  return found;
}

/** Code lines: what is left of the text without its comments (JSDoc examples import too). */
function codeLines(text: string): string[] {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").split("\n").filter((line) =>
    !line.trimStart().startsWith("//")
  );
}

/** The specifiers of a file's static and dynamic imports and re-exports. */
function specifiers(text: string): string[] {
  const code = codeLines(text).join("\n");
  const pattern =
    /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)"|import\(\s*"([^"]+)"\s*\)/g;
  return [...code.matchAll(pattern)].map((match) => match[1] ?? match[2]);
}

/** A relative specifier resolved to a path from the repository root. */
function resolve(from: string, specifier: string): string {
  const url = new URL(specifier, new URL(from, ROOT));
  return decodeURIComponent(url.pathname.slice(ROOT.pathname.length));
}

function folderOf(path: string): string {
  return path.slice(0, path.lastIndexOf("/"));
}

const files = (await Promise.all(FOLDERS.map(sources))).flat();

/** Every relative import, as `importer -> imported`. */
const imports: { from: string; to: string }[] = files.flatMap((file) =>
  specifiers(file.text).filter((specifier) => specifier.startsWith(".")).map((specifier) => ({
    from: file.path,
    to: resolve(file.path, specifier),
  }))
);

Deno.test("the import scan sees the imports it checks", () => {
  assert.ok(files.length > 100, `only ${files.length} source files found`);
  assert.ok(imports.some(({ from, to }) => from === "sdk/runs.ts" && to === "wire/mod.ts"));
  assert.ok(
    imports.some(({ from, to }) =>
      from === "server/store/kv/mod.ts" && to === "server/store/kv/_runs.ts"
    ),
  );
});

Deno.test("a _ file is imported only from its own folder", () => {
  const crossing = imports
    .filter(({ from, to }) =>
      to.slice(to.lastIndexOf("/") + 1).startsWith("_") && folderOf(to) !== folderOf(from)
    )
    .map(({ from, to }) => `${from} -> ${to}`);
  assert.deepEqual(crossing.filter((pair) => !PENDING.has(pair)), []);
  const stale = [...PENDING].filter((pair) => !crossing.includes(pair));
  assert.deepEqual(stale, [], "imports gone from the code: drop them from PENDING");
});

Deno.test("client/ stands alone, sdk/ never reaches the server, wire/ only the run contract", () => {
  const refused = imports.filter(({ from, to }) => {
    if (from.startsWith("client/")) {
      return to.startsWith("server/") || to.startsWith("sdk/") || to.startsWith("wire/");
    }
    if (from.startsWith("sdk/")) return to.startsWith("server/");
    if (from.startsWith("wire/")) return !to.startsWith("wire/") && to !== "client/contract.ts";
    return false;
  });
  assert.deepEqual(refused, []);
});

Deno.test("client/, sdk/, wire/ and npm/ use web standards only", () => {
  const offending: string[] = [];
  for (const file of files) {
    if (!/^(client|sdk|wire|npm)\//.test(file.path)) continue;
    if (specifiers(file.text).some((specifier) => specifier.startsWith("node:"))) {
      offending.push(`${file.path}: imports node:`);
    }
    if (codeLines(file.text).some((line) => /\bDeno\./.test(line))) {
      offending.push(`${file.path}: uses Deno.*`);
    }
  }
  assert.deepEqual(offending, []);
});

Deno.test("testing/ stands alone and touches a runtime's API only in its serving helper", () => {
  const outside = imports.filter(({ from, to }) =>
    from.startsWith("testing/") && !to.startsWith("testing/")
  );
  assert.deepEqual(outside, []);
  const offending: string[] = [];
  for (const file of files) {
    if (!file.path.startsWith("testing/")) continue;
    const nodeImports = specifiers(file.text).filter((specifier) => specifier.startsWith("node:"));
    if (nodeImports.length > 0 && file.path !== "testing/_listen.ts") {
      offending.push(`${file.path}: imports node:`);
    }
    if (codeLines(file.text).some((line) => /\bDeno\./.test(line))) {
      offending.push(`${file.path}: uses Deno.*`);
    }
  }
  assert.deepEqual(offending, []);
  assert.ok(
    files.some((file) =>
      file.path === "testing/_listen.ts" && specifiers(file.text).includes("node:http")
    ),
    "the serving helper is seen",
  );
});
