/**
 * `jose` is reached from `server/oidc/` only through a dynamic import, so a service that imports
 * the OIDC modules does not load it before the first ID token (startup time is measured; see
 * "Lazy dynamic imports" in `docs/design.md`).
 */
import assert from "node:assert/strict";

interface GraphDependency {
  code?: { specifier: string };
  isDynamic?: boolean;
}

interface GraphModule {
  specifier: string;
  dependencies?: GraphDependency[];
}

Deno.test("server/oidc/mod.ts reaches no npm package statically, and jose dynamically", async () => {
  const root = new URL("../../", import.meta.url);
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "server/oidc/mod.ts"],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  const graph = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    roots: string[];
    modules: GraphModule[];
  };
  const modules = new Map(graph.modules.map((module) => [module.specifier, module]));
  const staticNpm: string[] = [];
  const dynamic: string[] = [];
  const seen = new Set<string>();
  const pending = [...graph.roots];
  while (pending.length > 0) {
    const specifier = pending.pop()!;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    for (const dependency of modules.get(specifier)?.dependencies ?? []) {
      const target = dependency.code?.specifier;
      if (target === undefined) continue;
      if (dependency.isDynamic === true) dynamic.push(target);
      else if (target.startsWith("npm:")) staticNpm.push(target);
      else pending.push(target);
    }
  }
  assert.deepEqual(staticNpm, []);
  assert.ok(dynamic.some((target) => target.startsWith("npm:jose@")), dynamic.join(", "));
  assert.ok(
    seen.has(new URL("server/oidc/verifier.ts", root).href),
    "the walk reached the verifier",
  );
});
