import { connectPostgres } from "./server/store/postgres/_connect.ts";
const guard = Deno.args[1] === "guard";
let caught = 0;
if (guard) {
  globalThis.addEventListener("error", (event) => {
    const e = event.error as Error;
    if (e instanceof TypeError && String(e.stack).includes("nextWrite")) { caught++; event.preventDefault(); }
  });
}
const sql = connectPostgres(Deno.args[0]);
let ok = 0, fail = 0; const codes = new Map<string, number>();
let running = true;
const workers = Array.from({ length: 20 }, async () => {
  while (running) {
    try { if (Math.random() < 0.5) await sql`select pg_sleep(0.001), ${"x".repeat(10)}::text`; else await sql.begin(async (tx) => { await tx`select 1`; await tx`select pg_sleep(0.001)`; }); ok++; }
    catch (e) { fail++; const c = (e as {code?: string}).code ?? "?"; codes.set(c, (codes.get(c) ?? 0) + 1); await new Promise(r => setTimeout(r, 2)); }
  }
});
const ctl = (a: string) => new Deno.Command("runuser", { args: ["-u", "postgres", "--", "/usr/lib/postgresql/15/bin/pg_ctl", "-D", "/tmp/pgdev/data", "-w", ...a.split(" ")], stdout: "null", stderr: "null" }).output();
for (let i = 0; i < 8; i++) {
  await new Promise(r => setTimeout(r, 300));
  await ctl(i % 2 ? "-m immediate stop" : "-m fast stop");
  await new Promise(r => setTimeout(r, 200));
  await new Deno.Command("runuser", { args: ["-u", "postgres", "--", "/usr/lib/postgresql/15/bin/pg_ctl", "-D", "/tmp/pgdev/data", "-w", "-l", "/tmp/pgdev/log", "-o", "-c listen_addresses=127.0.0.1 -p 54329 -k /tmp/pgdev -c fsync=off", "start"], stdout: "null", stderr: "null" }).output();
  const t = performance.now(); let okBefore = ok;
  while (ok === okBefore && performance.now() - t < 15000) await new Promise(r => setTimeout(r, 20));
  console.log("round", i, "recovered in", Math.round(performance.now() - t), "ms");
}
running = false; await Promise.all(workers); await sql.end({ timeout: 1 });
console.log({ ok, fail, caught, codes: [...codes] });
