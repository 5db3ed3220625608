/**
 * The run owners a replica remembers for streams of their events (`KnownOwners`): who they let
 * in, how long (on the monotonic clock), which runs they never remember (ones the retention purge
 * could take meanwhile), and their bound.
 *
 * @module
 */
import assert from "node:assert/strict";
import { KNOWN_OWNER_MS, KnownOwners, MAX_KNOWN_OWNERS } from "../../server/runs/_run_access.ts";

const NOW = Date.parse("2026-11-27T12:00:00Z");
const HOUR = 3_600_000;
const owner = { principalId: "p-owner", capabilities: ["session:read"] as const };
const stranger = {
  principalId: "p-other",
  capabilities: ["session:read", "session:write"] as const,
};
const approver = { principalId: "p-approver", capabilities: ["session:approve"] as const };
const admin = { principalId: "p-admin", capabilities: ["authority:admin"] as const };

function run(runId: string, ended?: number) {
  return {
    runId,
    principalId: "p-owner",
    state: ended === undefined ? "running" as const : "completed" as const,
    ...(ended !== undefined ? { endedAt: new Date(ended).toISOString() } : {}),
  };
}

/** A memory on a clock the test moves. */
function owners(max?: number) {
  const clock = { ms: 1_000 };
  const memory = new KnownOwners({
    ...(max !== undefined ? { max } : {}),
    monotonic: () => clock.ms,
  });
  return { memory, clock };
}

Deno.test("known owners: the owner, approvers and admins are let in, anyone else refused, for a minute", () => {
  const { memory, clock } = owners();
  memory.remember(run("sesn_a"), NOW);
  assert.equal(memory.visible(owner, "sesn_a"), true);
  assert.equal(memory.visible(approver, "sesn_a"), true);
  assert.equal(memory.visible(admin, "sesn_a"), true);
  assert.equal(memory.visible(stranger, "sesn_a"), false);
  assert.equal(memory.visible(owner, "sesn_b"), undefined, "never read: read the record");
  clock.ms += KNOWN_OWNER_MS - 1;
  assert.equal(memory.visible(owner, "sesn_a"), true);
  clock.ms += 1;
  assert.equal(memory.visible(owner, "sesn_a"), undefined);
  assert.equal(memory.size, 0, "a forgotten owner's entry is gone");
});

Deno.test("known owners: the minute is timed on the monotonic clock, whatever the wall clock says", () => {
  const { memory, clock } = owners();
  // Remembered at a wall time an hour behind (a clock stepped back): still a minute only.
  memory.remember(run("sesn_a"), NOW - HOUR);
  clock.ms += KNOWN_OWNER_MS;
  assert.equal(memory.visible(owner, "sesn_a"), undefined);
});

Deno.test("known owners: a run the retention purge could take within the minute is not remembered", () => {
  const { memory } = owners();
  // Ended six days ago: the purge (7 days after the end) is far.
  memory.remember(run("sesn_recent", NOW - 6 * 24 * HOUR), NOW);
  assert.equal(memory.visible(owner, "sesn_recent"), true);
  // Ended 6 days and 23 hours ago: within the clocks' margin of the purge.
  memory.remember(run("sesn_old", NOW - (7 * 24 - 1) * HOUR), NOW);
  assert.equal(memory.visible(owner, "sesn_old"), undefined);
  memory.remember(run("sesn_older", NOW - 40 * 24 * HOUR), NOW);
  assert.equal(memory.visible(owner, "sesn_older"), undefined);
  assert.equal(memory.size, 1);
});

Deno.test("known owners: at most the bound, the oldest read going first", () => {
  const { memory } = owners(3);
  for (const id of ["sesn_1", "sesn_2", "sesn_3"]) memory.remember(run(id), NOW);
  // Read again: the most recent now.
  memory.remember(run("sesn_1"), NOW);
  memory.remember(run("sesn_4"), NOW);
  assert.equal(memory.size, 3);
  assert.equal(memory.visible(owner, "sesn_2"), undefined, "the oldest went");
  for (const id of ["sesn_1", "sesn_3", "sesn_4"]) assert.equal(memory.visible(owner, id), true);
  assert.ok(MAX_KNOWN_OWNERS >= 1_000);
});
