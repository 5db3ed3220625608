/**
 * `jose` is reached from `server/oidc/` only through a dynamic import, so a service that imports
 * the OIDC modules does not load it before the first ID token; and the server reaches the token
 * exchange (with the verifier) only dynamically, so a server that never sees an exchange does not
 * load it at startup (startup time is measured; see "Lazy dynamic imports" in `docs/design.md`).
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

const root = new URL("../../", import.meta.url);

/** The modules `entry` reaches statically, and the targets of the dynamic imports on the way. */
async function staticWalk(
  entry: string,
): Promise<{ seen: Set<string>; staticNpm: string[]; dynamic: string[] }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
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
  return { seen, staticNpm, dynamic };
}

Deno.test("server/oidc/mod.ts reaches no npm package statically, and jose dynamically", async () => {
  const { seen, staticNpm, dynamic } = await staticWalk("server/oidc/mod.ts");
  assert.deepEqual(staticNpm, []);
  assert.ok(dynamic.some((target) => target.startsWith("npm:jose@")), dynamic.join(", "));
  assert.ok(
    seen.has(new URL("server/oidc/verifier.ts", root).href),
    "the walk reached the verifier",
  );
});

Deno.test("the server reaches the token exchange and the verifier only dynamically", async () => {
  const { seen, dynamic } = await staticWalk("server/server.ts");
  assert.ok(seen.has(new URL("server/routes/token_exchange.ts", root).href));
  for (const lazy of ["server/oidc/exchange.ts", "server/oidc/verifier.ts"]) {
    assert.ok(!seen.has(new URL(lazy, root).href), `${lazy} is loaded at startup`);
  }
  assert.ok(dynamic.includes(new URL("server/oidc/exchange.ts", root).href), dynamic.join(", "));
});
