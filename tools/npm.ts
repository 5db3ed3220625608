/**
 * `deno task npm [--out DIR]`: builds the npm package `@automation/runtime` into `dist/npm/` (or
 * DIR): ESM JavaScript and `.d.ts` files compiled by the TypeScript compiler, a `package.json`, the
 * package's README (`npm/README.md`) and the LICENSE. Prints the folder on standard output; pack
 * it with `npm pack`.
 *
 * The entries are those of `deno.json`'s `exports` that run without Deno: every one but the
 * service's (`./server`, `./deploy`), with `.` built from `npm/mod.ts` (the SDK and the client
 * library) instead of `mod.ts`. A new export is in the next build without a change here.
 *
 * How: `deno info` lists the modules the entries reach and the npm packages they import; the
 * modules are copied into a temporary npm project whose `package.json` holds those packages (the
 * versions `deno.lock` resolved) and the compiler; `npm install` fills its `node_modules`, and
 * `tsc` (strict, `NodeNext`, `rewriteRelativeImportExtensions` turning `./x.ts` into `./x.js`)
 * type-checks and emits into the output folder. The compiler sees no Deno types, so a module of
 * the package that calls `Deno.*` fails the build. Needs `node` and `npm` on the PATH and the npm
 * registry (or npm's cache) for the compiler.
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

/** The TypeScript compiler the build runs (installed by npm into the temporary project). */
export const TYPESCRIPT_VERSION = "7.0.2";

/** Node's types, installed with the compiler only when a module of the package imports `node:`. */
export const TYPES_NODE_VERSION = "20.19.43";

/** The oldest Node the package supports (`engines.node`). */
export const NODE_ENGINE = ">=20";

/** Exports of `deno.json` that need Deno (the service): not in the npm package. */
export const DENO_ONLY_EXPORTS: readonly string[] = ["./server", "./deploy"];

/** The module the npm package's `.` is built from, in place of `mod.ts` (which has the service). */
export const NPM_ROOT_MODULE = "npm/mod.ts";

const DESCRIPTION =
  "The TypeScript SDK of the automation runtime service, a client library for a managed-agents " +
  "provider, and the service's wire types (Node 20+, Deno, browsers).";

/** One entry of the npm package: its subpath and the module it is built from. */
export interface NpmEntry {
  /** The subpath of `exports`, such as `"."` or `"./sdk"`. */
  subpath: string;
  /** The source module, relative to the repository, such as `"sdk/mod.ts"`. */
  source: string;
}

/** The `package.json` the build writes. */
export interface NpmPackageJson {
  name: string;
  version: string;
  description: string;
  license: string;
  type: "module";
  exports: Record<string, { types: string; import: string } | string>;
  files: string[];
  engines: { node: string };
  dependencies: Record<string, string>;
}

/** Options of {@linkcode buildNpmPackage}. */
export interface BuildNpmPackageOptions {
  /**
   * The folder to write, replaced as a whole once the build succeeded; refused when it holds
   * anything but an earlier build of the package.
   */
  outDir: string;
  /** The repository (default: the one this file is in). */
  repoRoot?: string;
}

/**
 * The npm package's entries for `deno.json`'s `exports`: the Deno-only ones left out, `.` built
 * from {@linkcode NPM_ROOT_MODULE}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { npmEntries } from "./npm.ts";
 *
 * assert.deepEqual(
 *   npmEntries({ ".": "./mod.ts", "./server": "./server/mod.ts", "./sdk": "./sdk/mod.ts" }),
 *   [{ subpath: ".", source: "npm/mod.ts" }, { subpath: "./sdk", source: "sdk/mod.ts" }],
 * );
 * ```
 */
export function npmEntries(exports: Record<string, string>): NpmEntry[] {
  return Object.entries(exports)
    .filter(([subpath]) => !DENO_ONLY_EXPORTS.includes(subpath))
    .map(([subpath, source]) => ({
      subpath,
      source: subpath === "." ? NPM_ROOT_MODULE : source.replace(/^\.\//, ""),
    }));
}

/**
 * The package an npm specifier names and the range it asks for: `npm:/@scope/name@^1.2.0/sub`
 * gives `{ name: "@scope/name", range: "^1.2.0" }`; null for anything else.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseNpmSpecifier } from "./npm.ts";
 *
 * assert.deepEqual(parseNpmSpecifier("npm:eventsource-parser@^4.1.3"), {
 *   name: "eventsource-parser",
 *   range: "^4.1.3",
 * });
 * assert.deepEqual(parseNpmSpecifier("npm:/@scope/pkg@1.0.0/sub/path.js"), {
 *   name: "@scope/pkg",
 *   range: "1.0.0",
 * });
 * assert.equal(parseNpmSpecifier("jsr:@std/assert"), null);
 * ```
 */
export function parseNpmSpecifier(specifier: string): { name: string; range: string } | null {
  const match = /^npm:\/?((?:@[^/@]+\/)?[^/@]+)(?:@([^/]+))?/.exec(specifier);
  return match === null ? null : { name: match[1], range: match[2] ?? "*" };
}

/** The package part of a bare specifier: `hono/jsx` is `hono`, `@a/b/c` is `@a/b`. */
function packageOfBare(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

interface DenoInfoDependency {
  specifier: string;
  code?: { specifier?: string };
  type?: { specifier?: string };
}

interface DenoInfoModule {
  kind: string;
  specifier: string;
  local?: string;
  dependencies?: DenoInfoDependency[];
  error?: string;
}

/** What the entries reach: local modules (relative paths) and npm packages (name to range). */
interface ModuleGraph {
  files: Set<string>;
  packages: Map<string, string>;
  usesNodeBuiltins: boolean;
}

async function run(
  command: string,
  args: string[],
  cwd: string,
): Promise<{ success: boolean; stdout: string; stderr: string }> {
  const output = await new Deno.Command(command, {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    success: output.success,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

async function moduleGraph(repoRoot: string, sources: readonly string[]): Promise<ModuleGraph> {
  const graph: ModuleGraph = { files: new Set(), packages: new Map(), usesNodeBuiltins: false };
  const rootUrl = pathToFileURL(`${repoRoot}/`).href;
  for (const source of sources) {
    const info = await run(Deno.execPath(), ["info", "--json", "--frozen", source], repoRoot);
    if (!info.success) throw new Error(`deno info ${source} failed: ${info.stderr.trim()}`);
    const { modules } = JSON.parse(info.stdout) as { modules: DenoInfoModule[] };
    for (const module of modules) {
      if (module.error !== undefined) throw new Error(`${module.specifier}: ${module.error}`);
      if (module.kind === "npm") continue; // counted from the importing module below
      if (module.kind === "node") {
        graph.usesNodeBuiltins = true;
        continue;
      }
      if (module.kind !== "esm" || !module.specifier.startsWith(rootUrl)) {
        throw new Error(`${module.specifier}: only this repository's TypeScript can be built`);
      }
      const path = decodeURIComponent(module.specifier.slice(rootUrl.length));
      graph.files.add(path);
      for (const dependency of module.dependencies ?? []) {
        for (const resolved of [dependency.code?.specifier, dependency.type?.specifier]) {
          const npm = resolved === undefined ? null : parseNpmSpecifier(resolved);
          if (npm === null) continue;
          if (packageOfBare(dependency.specifier) !== npm.name) {
            throw new Error(
              `${path} imports "${dependency.specifier}", which maps to the npm package ` +
                `${npm.name}: import it by the package's own name so that Node resolves it`,
            );
          }
          graph.packages.set(npm.name, npm.range);
        }
      }
    }
  }
  return graph;
}

/** The version `deno.lock` resolved for `npm:name@range` (its peer-dependency suffix removed). */
function lockedVersion(
  lock: { specifiers?: Record<string, string> },
  name: string,
  range: string,
): string {
  const resolved = lock.specifiers?.[`npm:${name}@${range}`];
  if (resolved === undefined) {
    throw new Error(`deno.lock has no version for npm:${name}@${range}: run \`deno install\``);
  }
  return resolved.replace(/_.*$/, "");
}

/** Refuses an output folder that holds anything but an earlier build of the package. */
async function checkReplaceable(outDir: string, name: string): Promise<void> {
  const entries: string[] = [];
  try {
    for await (const entry of Deno.readDir(outDir)) entries.push(entry.name);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    throw error;
  }
  if (entries.length === 0) return;
  const previous = await Deno.readTextFile(`${outDir}/package.json`).then(
    (text) => (JSON.parse(text) as { name?: unknown }).name,
    () => undefined,
  );
  if (previous !== name) {
    throw new Error(
      `${outDir} holds something else than an earlier build of ${name}: not replaced`,
    );
  }
}

/**
 * Builds the npm package into `options.outDir` and returns the `package.json` written there.
 * Throws with the compiler's or npm's output when a step fails.
 *
 * @example
 * ```ts ignore
 * const pkg = await buildNpmPackage({ outDir: "dist/npm" });
 * console.log(pkg.name, pkg.version, Object.keys(pkg.exports));
 * ```
 */
export async function buildNpmPackage(options: BuildNpmPackageOptions): Promise<NpmPackageJson> {
  const repoRoot = resolve(
    options.repoRoot ?? decodeURIComponent(new URL("../", import.meta.url).pathname),
  );
  const outDir = resolve(options.outDir);
  const config = JSON.parse(await Deno.readTextFile(`${repoRoot}/deno.json`)) as {
    name: string;
    version: string;
    license: string;
    exports: Record<string, string>;
  };
  await checkReplaceable(outDir, config.name);
  const lock = JSON.parse(await Deno.readTextFile(`${repoRoot}/deno.lock`));
  const entries = npmEntries(config.exports);
  const graph = await moduleGraph(repoRoot, entries.map((entry) => entry.source));

  const dependencies: Record<string, string> = {};
  const exact: Record<string, string> = {};
  for (const [name, range] of [...graph.packages].sort(([a], [b]) => a.localeCompare(b))) {
    const version = lockedVersion(lock, name, range);
    exact[name] = version;
    dependencies[name] = `^${version}`;
  }
  const emitted = (source: string, extension: string) => `./${source.replace(/\.ts$/, extension)}`;
  const packageJson: NpmPackageJson = {
    name: config.name,
    version: config.version,
    description: DESCRIPTION,
    license: config.license,
    type: "module",
    exports: {
      ...Object.fromEntries(entries.map((entry) => [entry.subpath, {
        types: emitted(entry.source, ".d.ts"),
        import: emitted(entry.source, ".js"),
      }])),
      "./package.json": "./package.json",
    },
    // The top folders of the emitted modules (a module at the top: its two files).
    files: [
      ...new Set(
        [...graph.files].flatMap((file) =>
          file.includes("/")
            ? [file.slice(0, file.indexOf("/"))]
            : [emitted(file, ".js").slice(2), emitted(file, ".d.ts").slice(2)]
        ),
      ),
    ].sort(),
    engines: { node: NODE_ENGINE },
    dependencies,
  };

  // The temporary project sits next to the output folder, so that the finished package moves
  // into place by a rename once it is complete: a failed build leaves the previous one as it was.
  await Deno.mkdir(dirname(outDir), { recursive: true });
  const staging = await Deno.makeTempDir({ dir: dirname(outDir), prefix: ".npm-build-" });
  try {
    for (const file of graph.files) {
      const target = `${staging}/src/${file}`;
      await Deno.mkdir(dirname(target), { recursive: true });
      await Deno.copyFile(`${repoRoot}/${file}`, target);
    }
    const devDependencies: Record<string, string> = { typescript: TYPESCRIPT_VERSION };
    if (graph.usesNodeBuiltins) devDependencies["@types/node"] = TYPES_NODE_VERSION;
    await Deno.writeTextFile(
      `${staging}/package.json`,
      JSON.stringify({ private: true, type: "module", dependencies: exact, devDependencies }),
    );
    await Deno.writeTextFile(
      `${staging}/tsconfig.json`,
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          lib: ["ES2023", "DOM", "DOM.Iterable", "DOM.AsyncIterable"],
          types: graph.usesNodeBuiltins ? ["node"] : [],
          module: "NodeNext",
          moduleResolution: "NodeNext",
          rewriteRelativeImportExtensions: true,
          verbatimModuleSyntax: true,
          strict: true,
          declaration: true,
          noEmitOnError: true,
          skipLibCheck: true,
          newLine: "lf",
          rootDir: "src",
          outDir: "out",
        },
        files: entries.map((entry) => `src/${entry.source}`),
      }),
    );
    const install = await run("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      "--no-package-lock",
      "--ignore-scripts",
      "--loglevel=error",
    ], staging);
    if (!install.success) throw new Error(`npm install failed:\n${install.stderr.trim()}`);
    const tsc = await run(
      "node",
      ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json", "--pretty", "false"],
      staging,
    );
    if (!tsc.success) throw new Error(`tsc failed:\n${(tsc.stdout + tsc.stderr).trim()}`);

    const out = `${staging}/out`;
    await Deno.writeTextFile(`${out}/package.json`, JSON.stringify(packageJson, null, 2) + "\n");
    await Deno.copyFile(`${repoRoot}/npm/README.md`, `${out}/README.md`);
    await Deno.copyFile(`${repoRoot}/LICENSE`, `${out}/LICENSE`);
    await checkReplaceable(outDir, config.name);
    await Deno.remove(outDir, { recursive: true }).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
    await Deno.rename(out, outDir);
  } finally {
    await Deno.remove(staging, { recursive: true });
  }
  return packageJson;
}

if (import.meta.main) {
  let outDir: string;
  try {
    const { values } = parseArgs({
      args: Deno.args,
      options: { out: { type: "string" } },
      strict: true,
      allowPositionals: false,
    });
    // `deno task` runs in the repository; a relative folder given is the caller's.
    outDir = values.out === undefined
      ? decodeURIComponent(new URL("../dist/npm", import.meta.url).pathname)
      : resolve(Deno.env.get("INIT_CWD") ?? Deno.cwd(), values.out);
  } catch (error) {
    console.error(`deno task npm: ${(error as Error).message} (usage: deno task npm [--out DIR])`);
    Deno.exit(2);
  }
  try {
    const pkg = await buildNpmPackage({ outDir });
    console.error(`built ${pkg.name}@${pkg.version} (${Object.keys(pkg.exports).join(", ")})`);
    console.log(outDir);
  } catch (error) {
    console.error(`deno task npm: ${(error as Error).message}`);
    Deno.exit(1);
  }
}
