/**
 * What every part's contract cases share: how a case is registered, the records they build, and
 * a second handle on a store as another replica. Used by `contract.ts` and the `_*_contract.ts`
 * files of each part.
 *
 * @module
 */
import type {
  AuditEntryInput,
  PrincipalRecord,
  Store,
  StoredRunRecord,
} from "../../server/store/types.ts";

/** Registers one contract case on a store of a fresh namespace (the suite's own `test`). */
export type ContractCase = (
  title: string,
  body: (store: Store, openTwin: () => Promise<Store>) => Promise<void>,
) => void;

/** Registers one contract case on the stores of two fresh namespaces of one backend. */
export type TwoNamespaceCase = (title: string, body: (a: Store, b: Store) => Promise<void>) => void;

/** A day in ms. */
export const DAY = 86_400_000;

/** A fresh namespace (32 hex digits, as the bootstrap derives them). */
export function randomNamespace(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** 64 random hex digits (a digest). */
export function randomHex(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * The parameters of a claim on a fresh idempotency key at `now`, held `leaseMs` (default a
 * minute), kept a day.
 */
export function freshClaim(now: number, leaseMs = 60_000): {
  scope: string;
  requestDigest: string;
  now: number;
  leaseMs: number;
  expiresAt: number;
} {
  return { scope: randomHex(), requestDigest: randomHex(), now, leaseMs, expiresAt: now + DAY };
}

/**
 * A valid principal record with fresh random ids, digest and nonce, expiring in a day; every
 * store test builds its records with it.
 */
export function testPrincipal(overrides: Partial<PrincipalRecord> = {}): PrincipalRecord {
  return {
    principalId: crypto.randomUUID(),
    bearerDigest: randomHex(),
    capabilities: ["session:read"],
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    issuerId: crypto.randomUUID(),
    createdAt: new Date().toISOString(),
    revokedAt: null,
    nonce: randomHex().slice(0, 22),
    ...overrides,
  };
}

/** A run record with fresh ids, created `offsetMs` after a fixed instant. */
export function testRun(overrides: Partial<StoredRunRecord> = {}, offsetMs = 0): StoredRunRecord {
  const at = new Date(Date.UTC(2026, 0, 1) + offsetMs).toISOString();
  return {
    runId: `sesn_${crypto.randomUUID().replaceAll("-", "")}`,
    principalId: crypto.randomUUID(),
    agentId: "agent_1",
    environmentId: "env_1",
    state: "running",
    lastEventSeq: 0,
    createdAt: at,
    updatedAt: at,
    ...overrides,
  };
}

/** An audit entry of a fresh actor, now. */
export function auditInput(overrides: Partial<AuditEntryInput> = {}): AuditEntryInput {
  return {
    at: new Date().toISOString(),
    action: "run.started",
    actorId: crypto.randomUUID(),
    correlationId: crypto.randomUUID(),
    outcome: "ok",
    ...overrides,
  };
}

/**
 * A second handle on the store's namespace, as another replica. A Deno KV file belongs to one
 * process (replicas share PostgreSQL, or the host's own KV), so on `kv` the concurrent calls run
 * on the one handle instead.
 */
export async function twinOf(store: Store, openTwin: () => Promise<Store>): Promise<Store> {
  if (store.kind === "kv") return { ...store, close: () => Promise.resolve() };
  return await openTwin();
}
