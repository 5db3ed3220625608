/**
 * The bodies of the provider's own API that the `/provider` interface reads itself, as zod
 * schemas (loaded on the first body, see `lazy.ts`), each `satisfies` its wire type
 * (`wire/native.ts`). They check what the gateway decides on (the agent and its overrides, the
 * environment, the resources and vaults, the events and their types) and fail closed: a field or
 * a kind of resource or event they do not name is refused, so nothing the policy cannot see
 * reaches the provider. The provider checks the rest (content blocks, rubric, budget).
 *
 * | schema | route |
 * |---|---|
 * | {@linkcode nativeCreateSessionBody} | `POST /provider/v1/sessions` |
 * | {@linkcode nativeSendEventsBody} | `POST /provider/v1/sessions/{id}/events` |
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeCreateSessionBody } from "./native.ts";
 * assert.equal(
 *   nativeCreateSessionBody.safeParse({ agent: "agent_1", environment_id: "env_1" }).success,
 *   true,
 * );
 * assert.equal(
 *   nativeCreateSessionBody.safeParse({ agent: "agent_1", environment_id: "env_1", x: 1 }).success,
 *   false,
 * );
 * ```
 *
 * @module
 */
import { z } from "zod";
import {
  NATIVE_SENDABLE_EVENTS,
  type NativeCreateSessionBody,
  type NativeSendEventsBody,
} from "../../wire/mod.ts";
import { MAX_INPUT_ITEMS, MAX_TITLE_LENGTH, printableId } from "./runs.ts";

/** Most initial events of a session (the provider's limit). */
export const MAX_INITIAL_EVENTS = 50;
/** Most events in one send. */
export const MAX_SENT_EVENTS = 100;

const version = z.number().int("Must be a whole number >= 1").min(1, "Must be a whole number >= 1")
  .max(Number.MAX_SAFE_INTEGER);

/** The agent: an id, or a reference (overrides only in `agent_with_overrides`). */
const agentReference = z.union([
  printableId,
  z.strictObject({ type: z.literal("agent"), id: printableId, version: version.optional() }),
  z.strictObject({
    type: z.literal("agent_with_overrides"),
    id: printableId,
    version: version.optional(),
    model: z.unknown().optional(),
    system: z.unknown().optional(),
    tools: z.unknown().optional(),
    mcp_servers: z.unknown().optional(),
    skills: z.unknown().optional(),
  }),
], 'Must be an agent id, or {type: "agent" | "agent_with_overrides", id, version?}');

const checkout = z.looseObject({ type: z.string() });

/** A resource a session starts with: a repository, a file or a memory store. */
const resource = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("github_repository"),
    url: z.string().min(1).max(2048),
    authorization_token: z.string().max(8192).optional(),
    checkout: checkout.optional(),
    mount_path: z.string().max(1024).optional(),
  }),
  z.strictObject({
    type: z.literal("file"),
    file_id: printableId,
    mount_path: z.string().max(1024).optional(),
  }),
  z.strictObject({
    type: z.literal("memory_store"),
    memory_store_id: printableId,
    access: z.string().max(64).optional(),
    instructions: z.string().max(65_536).optional(),
  }),
], "Must be a github_repository, file or memory_store resource");

const metadata = z.record(
  z.string().min(1).max(64),
  z.string().max(512),
).refine((pairs) => Object.keys(pairs).length <= 16, "Must hold at most 16 pairs");

/** Body of `POST /provider/v1/sessions`. */
export const nativeCreateSessionBody = z.strictObject({
  agent: agentReference,
  environment_id: printableId,
  title: z.string().max(MAX_TITLE_LENGTH).nullable().optional(),
  metadata: metadata.optional(),
  resources: z.array(resource).max(MAX_INPUT_ITEMS).optional(),
  vault_ids: z.array(printableId).max(MAX_INPUT_ITEMS).optional(),
  budget: z.looseObject({ type: z.string() }).nullable().optional(),
  initial_events: z.array(
    z.looseObject({
      type: z.enum(
        ["user.message", "user.define_outcome"],
        "Must be user.message or user.define_outcome",
      ),
    }),
  ).max(MAX_INITIAL_EVENTS, `Must hold at most ${MAX_INITIAL_EVENTS} events`).optional(),
}) satisfies z.ZodType<NativeCreateSessionBody>;

/** Body of `POST /provider/v1/sessions/{id}/events`. */
export const nativeSendEventsBody = z.strictObject({
  events: z.array(
    z.looseObject({
      type: z.enum(
        NATIVE_SENDABLE_EVENTS,
        `Must be one of ${
          NATIVE_SENDABLE_EVENTS.join(", ")
        } (others are not sent through the gateway)`,
      ),
    }),
  ).min(1, "Must hold at least one event")
    .max(MAX_SENT_EVENTS, `Must hold at most ${MAX_SENT_EVENTS} events`),
}) satisfies z.ZodType<NativeSendEventsBody>;
