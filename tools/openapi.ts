/**
 * `deno task openapi`: writes the OpenAPI document of the default route table to
 * `docs/openapi.json` (`--check`: exits 1 when the committed file differs instead).
 *
 * @module
 */
import { renderOpenApiDocument } from "../server/openapi/document.ts";
import { defaultRouteTable } from "../server/openapi/table.ts";

const TARGET = new URL("../docs/openapi.json", import.meta.url);

if (import.meta.main) {
  const text = renderOpenApiDocument(await defaultRouteTable());
  if (Deno.args.includes("--check")) {
    const committed = await Deno.readTextFile(TARGET).catch(() => "");
    if (committed !== text) {
      console.error("docs/openapi.json is out of date: run `deno task openapi`");
      Deno.exit(1);
    }
  } else {
    await Deno.writeTextFile(TARGET, text);
  }
}
