/**
 * The audit part of the store (`store.audit`): the namespace's append-only audit log, each entry
 * numbered by a `seq` that increases in the order entries were appended, with no two alike even
 * when replicas append at once. Entries are kept 90 days.
 *
 * Writes of other parts that must be audited carry their entry into their own atomic step
 * (`PrincipalStore.create` and `PrincipalStore.revoke` take an `AuditEntryInput`), numbered in
 * that step like an append.
 *
 * @module
 */
import type { AuditEntry, AuditEntryInput, AuditListQuery, AuditPage } from "./run_types.ts";

/** The audit log of the store's namespace. */
export interface AuditStore {
  /** Appends an entry and returns it with its `seq`. */
  append(entry: AuditEntryInput): Promise<AuditEntry>;
  /** Lists entries newest first, in cursor pages. */
  list(params: AuditListQuery): Promise<AuditPage>;
}
