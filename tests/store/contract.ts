/**
 * The contract every {@linkcode Store} backend must pass, part by part. A backend's test file calls
 * {@linkcode runStoreContract} once; it registers the cases of every part (or of the parts named
 * in `parts`), each in its own file: `_principal_contract.ts`, `_idempotency_contract.ts`,
 * `_authority_contract.ts`, `_lease_contract.ts`, `_run_contract.ts`, `_audit_contract.ts`,
 * `_event_contract.ts`, `_answer_contract.ts`, `_trust_policy_contract.ts`, `_activity_contract.ts`,
 * `_notification_contract.ts` and `_spend_contract.ts`. Each case opens stores under fresh random
 * namespaces, so cases never see each other's records even on a shared database.
 *
 * @module
 */
import { type Store, STORE_PARTS, type StorePartName } from "../../server/store/types.ts";
import { type ContractCase, randomNamespace, type TwoNamespaceCase } from "./_fixtures.ts";
import { runPrincipalContract } from "./_principal_contract.ts";
import { runIdempotencyContract } from "./_idempotency_contract.ts";
import { runAuthorityContract } from "./_authority_contract.ts";
import { runLeaseContract } from "./_lease_contract.ts";
import { runRunContract } from "./_run_contract.ts";
import { runAuditContract } from "./_audit_contract.ts";
import { runEventContract } from "./_event_contract.ts";
import { runAnswerContract } from "./_answer_contract.ts";
import { runTrustPolicyContract } from "./_trust_policy_contract.ts";
import { runActivityContract } from "./_activity_contract.ts";
import { runNotificationContract } from "./_notification_contract.ts";
import { runSpendContract } from "./_spend_contract.ts";

export { testPrincipal } from "./_fixtures.ts";

/** Opens a store for `namespace` on the backend under test; every call shares one backend. */
export type OpenStore = (namespace: string) => Promise<Store>;

/** Options of {@linkcode runStoreContract}. */
export interface StoreContractOptions {
  /** Skip every case (for example when the backend is not reachable). */
  ignore?: boolean;
  /** Keep Deno's resource and op sanitizers on (default true). */
  sanitize?: boolean;
  /** The parts whose cases to register (default: every part). */
  parts?: readonly StorePartName[];
}

/** Each part's cases. A case may use other parts too (a creation's audit entry, say). */
const PART_CONTRACTS: Record<
  StorePartName,
  (test: ContractCase, testTwo: TwoNamespaceCase) => void
> = {
  principals: runPrincipalContract,
  idempotency: runIdempotencyContract,
  authority: runAuthorityContract,
  leases: runLeaseContract,
  runs: runRunContract,
  audit: runAuditContract,
  events: runEventContract,
  answers: runAnswerContract,
  trustPolicies: runTrustPolicyContract,
  activity: runActivityContract,
  notifications: runNotificationContract,
  spend: runSpendContract,
};

/**
 * Registers the contract's `Deno.test` cases for one backend.
 *
 * @example
 * ```ts ignore
 * import { runStoreContract } from "./contract.ts";
 * import { openKvStore } from "../../server/store/mod.ts";
 * runStoreContract("kv", (namespace) => openKvStore({ path: "/tmp/x.kv", namespace }));
 * ```
 */
export function runStoreContract(
  name: string,
  open: OpenStore,
  options: StoreContractOptions = {},
): void {
  const sanitize = options.sanitize ?? true;

  function register(title: string, fn: () => Promise<void>): void {
    Deno.test({
      name: `${name} store: ${title}`,
      ignore: options.ignore ?? false,
      sanitizeOps: sanitize,
      sanitizeResources: sanitize,
      fn,
    });
  }

  const test: ContractCase = (title, body) =>
    register(title, async () => {
      const namespace = randomNamespace();
      const store = await open(namespace);
      try {
        // A second handle on the same namespace: another replica sharing the store.
        await body(store, () => open(namespace));
      } finally {
        await store.close();
      }
    });

  const testTwo: TwoNamespaceCase = (title, body) =>
    register(title, async () => {
      const a = await open(randomNamespace());
      const b = await open(randomNamespace());
      try {
        await body(a, b);
      } finally {
        await a.close();
        await b.close();
      }
    });

  for (const part of options.parts ?? STORE_PARTS) PART_CONTRACTS[part](test, testTwo);
}
