/**
 * The run owners a replica remembers for streams of their events (`KnownOwners`): who they let
 * in, how long, which runs they never remember (ones the retention purge could take meanwhile),
 * and their bound.
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

Deno.test("known owners: the owner, approvers and admins are let in, anyone else refused, for a minute", () => {
  const owners = new KnownOwners();
  owners.remember(run("sesn_a"), NOW);
  assert.equal(owners.visible(owner, "sesn_a", NOW), true);
  assert.equal(owners.visible(approver, "sesn_a", NOW), true);
  assert.equal(owners.visible(admin, "sesn_a", NOW), true);
  assert.equal(owners.visible(stranger, "sesn_a", NOW), false);
  assert.equal(owners.visible(owner, "sesn_b", NOW), undefined, "never read: read the record");
  assert.equal(owners.visible(owner, "sesn_a", NOW + KNOWN_OWNER_MS - 1), true);
  assert.equal(owners.visible(owner, "sesn_a", NOW + KNOWN_OWNER_MS), undefined);
  assert.equal(owners.size, 0, "a forgotten owner's entry is gone");
});

Deno.test("known owners: a run the retention purge could take within the minute is not remembered", () => {
  const owners = new KnownOwners();
  // Ended six days ago: the purge (7 days after the end) is far.
  owners.remember(run("sesn_recent", NOW - 6 * 24 * HOUR), NOW);
  assert.equal(owners.visible(owner, "sesn_recent", NOW), true);
  // Ended 6 days and 23 hours ago: within the clocks' margin of the purge.
  owners.remember(run("sesn_old", NOW - (7 * 24 - 1) * HOUR), NOW);
  assert.equal(owners.visible(owner, "sesn_old", NOW), undefined);
  owners.remember(run("sesn_older", NOW - 40 * 24 * HOUR), NOW);
  assert.equal(owners.visible(owner, "sesn_older", NOW), undefined);
  assert.equal(owners.size, 1);
});

Deno.test("known owners: at most the bound, the oldest read going first", () => {
  const owners = new KnownOwners(3);
  for (const id of ["sesn_1", "sesn_2", "sesn_3"]) owners.remember(run(id), NOW);
  // Read again: the most recent now.
  owners.remember(run("sesn_1"), NOW + 1);
  owners.remember(run("sesn_4"), NOW + 2);
  assert.equal(owners.size, 3);
  assert.equal(owners.visible(owner, "sesn_2", NOW + 3), undefined, "the oldest went");
  for (const id of ["sesn_1", "sesn_3", "sesn_4"]) {
    assert.equal(owners.visible(owner, id, NOW + 3), true);
  }
  assert.ok(MAX_KNOWN_OWNERS >= 1_000);
});
