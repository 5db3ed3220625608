import assert from "node:assert/strict";
import { parse } from "dotenv";
import fc from "fast-check";
import { parsePlainDotenv } from "../../server/bootstrap/_plain_dotenv.ts";
import { readSecretFile } from "../../server/bootstrap/secret_file.ts";
import { formatSecretFile, generateBootstrapValues } from "../../server/bootstrap/variables.ts";

const NAME_START = "abcxyzABCXYZ_".split("");
const NAME_REST = [...NAME_START, ..."0189".split("")];
const VALUE_CHARS = "aZ09_.,:;+/=@%~^-".split("");
// Comment text may hold anything but a line break, quotes and `=` included.
const COMMENT_CHARS = [..."aZ9 =#'\"`\\$:-".split(""), "\t", "é"];

const name = fc.tuple(
  fc.constantFrom(...NAME_START),
  fc.array(fc.constantFrom(...NAME_REST), { maxLength: 6 }),
).map(([first, rest]) => first + rest.join(""));
const line = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.tuple(name, fc.array(fc.constantFrom(...VALUE_CHARS), { maxLength: 12 })).map((
      [key, value],
    ) => `${key}=${value.join("")}`),
  },
  {
    weight: 1,
    arbitrary: fc.array(fc.constantFrom(...COMMENT_CHARS), { maxLength: 12 }).map((text) =>
      `#${text.join("")}`
    ),
  },
  { weight: 1, arbitrary: fc.constant("") },
);
const plainFile = fc.tuple(
  fc.array(fc.tuple(line, fc.constantFrom("\n", "\r\n", "\r")), { maxLength: 12 }),
  fc.boolean(),
).map(([lines, trailingBreak]) => {
  const text = lines.map(([content, lineBreak]) => content + lineBreak).join("");
  return trailingBreak ? text : text.replace(/(\r\n|\r|\n)$/, "");
});

Deno.test("on every file of the plain subset the plain parser and dotenv agree", () => {
  fc.assert(
    fc.property(plainFile, (text) => {
      const plain = parsePlainDotenv(text);
      assert.notEqual(plain, null, JSON.stringify(text));
      assert.deepEqual({ ...plain }, { ...parse(text) }, JSON.stringify(text));
    }),
    { numRuns: 3000 },
  );
});

Deno.test("the secret file init writes is in the plain subset, so serve never loads dotenv for it", () => {
  for (let i = 0; i < 50; i++) {
    const values = generateBootstrapValues();
    const text = formatSecretFile(values);
    const plain = parsePlainDotenv(text);
    assert.notEqual(plain, null, text.replace(/art_\S+/, "art_…"));
    assert.deepEqual({ ...plain }, { ...parse(text) });
    assert.equal(plain!.AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN, values.token);
  }
});

Deno.test("anything outside the plain subset is left to dotenv", () => {
  for (
    const text of [
      'A="quoted"',
      "A='quoted'",
      "A=two words",
      "A = spaced",
      "A=value # trailing comment",
      "export A=1",
      "  A=1",
      "A=1  ",
      "  # indented comment",
      "   ",
      "a.b=1",
      "a-b=1",
      "A:1",
      "A=back\\slash",
      "A=$HOME",
      "A=`tick`",
      "__proto__=1",
      "1A=1",
      "A=é",
    ]
  ) {
    assert.equal(parsePlainDotenv(`B=2\n${text}\n`), null, text);
  }
});

Deno.test("a hand-edited secret file with quotes and export lines is still read through dotenv", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const values = generateBootstrapValues();
    const path = `${dir}/bootstrap.env`;
    const text = [
      "# edited by hand",
      `export AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN="${values.token}"`,
      `AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL='${values.principalId}' # the admin`,
      `AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES = ${values.capabilities.join(",")}`,
      `AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT=${values.expiresAt}`,
      "",
    ].join("\n");
    await Deno.writeTextFile(path, text, { mode: 0o600 });
    await Deno.chmod(path, 0o600);
    assert.equal(parsePlainDotenv(text), null);
    assert.deepEqual(await readSecretFile(path), {
      AUTOMATION_RUNTIME_BOOTSTRAP_TOKEN: values.token,
      AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: values.principalId,
      AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: values.capabilities.join(","),
      AUTOMATION_RUNTIME_BOOTSTRAP_EXPIRES_AT: values.expiresAt,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
