/**
 * Deployments and deployment runs in the provider simulator: a deployment names an agent, an
 * environment and the initial events of the sessions it starts; a run starts one (or records why
 * it could not); a cron schedule lists its next firing times.
 *
 * @module
 */
import { type Json, jsonResponse } from "./http.ts";
import type { AgentLookups } from "./_agents.ts";
import type { SessionEvents } from "./_session_events.ts";
import type { SessionLookups } from "./_sessions.ts";
import {
  bad,
  newId,
  notFound,
  now,
  obj,
  paginate,
  patchMetadata,
  requireString,
  type Section,
  str,
  visible,
} from "./_support.ts";

/**
 * Next UTC firing times of a five-field cron expression (`*`, lists, ranges, steps).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { upcomingRuns } from "./_deployments.ts";
 * const from = new Date("2026-01-01T00:00:30Z");
 * assert.deepEqual(upcomingRuns("0 0,12 * * *", 2, from), [
 *   "2026-01-01T12:00:00.000Z",
 *   "2026-01-02T00:00:00.000Z",
 * ]);
 * ```
 */
export function upcomingRuns(expression: string, count: number, from = new Date()): string[] {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) throw bad("schedule.expression must have five fields");
  const ranges: [number, number][] = [[0, 59], [0, 23], [1, 31], [1, 12], [0, 6]];
  const sets = fields.map((field, i) => {
    const [min, max] = ranges[i];
    const set = new Set<number>();
    for (const part of field.split(",")) {
      const m = /^(\*|\d+(?:-\d+)?)(?:\/(\d+))?$/.exec(part);
      if (!m) throw bad(`schedule.expression field "${field}" is not valid`);
      let [lo, hi] = m[1] === "*" ? [min, max] : m[1].split("-").map(Number);
      if (hi === undefined) hi = m[2] ? max : lo;
      const step = m[2] ? Number(m[2]) : 1;
      if (lo < min || hi > max || lo > hi || step < 1) {
        throw bad(`schedule.expression field "${field}" is out of range`);
      }
      for (let v = lo; v <= hi; v += step) set.add(v);
    }
    return set;
  });
  const out: string[] = [];
  const t = new Date(from.getTime());
  t.setUTCSeconds(0, 0);
  t.setUTCMinutes(t.getUTCMinutes() + 1);
  for (let guard = 0; out.length < count && guard < 600_000; guard++) {
    if (
      sets[0].has(t.getUTCMinutes()) && sets[1].has(t.getUTCHours()) &&
      sets[2].has(t.getUTCDate()) && sets[3].has(t.getUTCMonth() + 1) && sets[4].has(t.getUTCDay())
    ) out.push(t.toISOString());
    t.setUTCMinutes(t.getUTCMinutes() + 1);
  }
  return out;
}

/** Installs the deployment and deployment run routes. */
export function installDeploymentRoutes(
  { state, route }: Section,
  agents: AgentLookups,
  sessions: SessionLookups,
  events: SessionEvents,
): void {
  function getDeployment(id: string): Json {
    const deployment = state.deployments.get(id);
    if (!deployment) throw notFound(`Deployment ${id}`);
    return deployment;
  }
  function checkSchedule(schedule: unknown): Json | null {
    if (schedule === undefined || schedule === null) return null;
    const s = obj(schedule);
    if (
      !s || s.type !== "cron" || typeof s.expression !== "string" || typeof s.timezone !== "string"
    ) {
      throw bad("schedule must be {type: cron, expression, timezone}");
    }
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: s.timezone });
    } catch {
      throw bad(`schedule.timezone ${s.timezone} is not an IANA time zone`);
    }
    return { ...s, last_run_at: null, upcoming_runs_at: upcomingRuns(s.expression, 5) };
  }
  route("POST", "/v1/deployments", async (c) => {
    const body = await c.body();
    requireString(body, "name");
    const agentRef = body.agent;
    const agentId = typeof agentRef === "string" ? agentRef : str(obj(agentRef)?.id);
    if (!agentId) throw bad("agent is required");
    agents.getAgent(agentId);
    agents.getEnvironment(requireString(body, "environment_id"));
    const initial = body.initial_events;
    if (!Array.isArray(initial) || initial.length < 1 || initial.length > 50) {
      throw bad("initial_events must hold 1 to 50 events");
    }
    if (!initial.some((e) => obj(e)?.type === "user.message")) {
      throw bad("initial_events must include a user.message");
    }
    const at = now();
    const version = typeof obj(agentRef)?.version === "number" ? obj(agentRef)?.version : null;
    const record: Json = {
      id: newId("depl"),
      type: "deployment",
      name: body.name,
      description: body.description ?? null,
      agent: { type: "agent", id: agentId, version },
      environment_id: body.environment_id,
      initial_events: initial,
      resources: body.resources ?? [],
      vault_ids: body.vault_ids ?? [],
      metadata: patchMetadata({}, body.metadata),
      status: "active",
      paused_reason: null,
      schedule: checkSchedule(body.schedule),
      created_at: at,
      updated_at: at,
      archived_at: null,
    };
    state.deployments.set(record.id as string, record);
    return jsonResponse(record);
  });
  route("GET", "/v1/deployments", (c) => {
    return jsonResponse(paginate(visible([...state.deployments.values()], c.url), c.url));
  });
  route("GET", "/v1/deployments/:id", (c) => jsonResponse(getDeployment(c.params.id)));
  function mutableDeployment(id: string): Json {
    const deployment = getDeployment(id);
    if (deployment.archived_at) throw bad("Archived deployments are immutable");
    return deployment;
  }
  route("POST", "/v1/deployments/:id/pause", (c) => {
    const deployment = mutableDeployment(c.params.id);
    deployment.status = "paused";
    deployment.paused_reason = { type: "manual" };
    return jsonResponse(deployment);
  });
  route("POST", "/v1/deployments/:id/unpause", (c) => {
    const deployment = mutableDeployment(c.params.id);
    deployment.status = "active";
    deployment.paused_reason = null;
    const schedule = obj(deployment.schedule);
    if (schedule) schedule.upcoming_runs_at = upcomingRuns(schedule.expression as string, 5);
    return jsonResponse(deployment);
  });
  route("POST", "/v1/deployments/:id/archive", (c) => {
    const deployment = getDeployment(c.params.id);
    deployment.archived_at ??= now();
    deployment.schedule = deployment.schedule
      ? { ...obj(deployment.schedule), upcoming_runs_at: [] }
      : null;
    return jsonResponse(deployment);
  });
  route("POST", "/v1/deployments/:id/run", (c) => {
    const deployment = mutableDeployment(c.params.id);
    const agent = obj(deployment.agent)!;
    const run: Json = {
      id: newId("drun"),
      type: "deployment_run",
      deployment_id: deployment.id,
      agent: { ...agent },
      trigger_context: { type: "manual" },
      session_id: null,
      error: null,
      created_at: now(),
    };
    try {
      const session = sessions.createSession({
        agent: agent.version === null
          ? agent.id
          : { type: "agent", id: agent.id, version: agent.version },
        environment_id: deployment.environment_id,
        resources: deployment.resources,
        vault_ids: deployment.vault_ids,
        deployment_id: deployment.id,
      });
      events.receiveEvents(session, deployment.initial_events as unknown[]);
      run.session_id = session.record.id;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      run.error = {
        type: /agent/i.test(message)
          ? "agent_archived_error"
          : /environment/i.test(message)
          ? "environment_archived_error"
          : "unknown_error",
        message,
      };
    }
    state.deploymentRuns.set(run.id as string, run);
    return jsonResponse(run);
  });
  route("GET", "/v1/deployment_runs", (c) => {
    let runs = [...state.deploymentRuns.values()].reverse();
    const deploymentId = c.url.searchParams.get("deployment_id");
    if (deploymentId) runs = runs.filter((r) => r.deployment_id === deploymentId);
    const hasError = c.url.searchParams.get("has_error");
    if (hasError === "true") runs = runs.filter((r) => r.error !== null);
    if (hasError === "false") runs = runs.filter((r) => r.session_id !== null);
    return jsonResponse(paginate(runs, c.url));
  });
  route("GET", "/v1/deployment_runs/:id", (c) => {
    const run = state.deploymentRuns.get(c.params.id);
    if (!run) throw notFound(`Deployment run ${c.params.id}`);
    return jsonResponse(run);
  });
}
