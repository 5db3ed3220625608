/**
 * The tool names each capability lists, in the catalog's order, for the tests that assert the
 * exact list a principal sees.
 *
 * @module
 */

const BY_CAPABILITY: Readonly<Record<string, readonly string[]>> = {
  "session:read": [
    "runtime_info",
    "run_list",
    "run_get",
    "run_events",
    "run_pending",
    "pending_list",
    "activity_list",
    "usage_get",
  ],
  "session:write": ["run_start", "run_cancel", "run_send", "run_respond_custom_tool"],
  "session:approve": ["run_confirm_tool"],
  "authority:admin": ["principals_list", "principal_issue", "principal_revoke", "audit_list"],
};

const ORDER = [
  "runtime_info",
  "principals_list",
  "principal_issue",
  "principal_revoke",
  "run_start",
  "run_list",
  "run_get",
  "run_events",
  "run_cancel",
  "run_send",
  "run_pending",
  "run_confirm_tool",
  "run_respond_custom_tool",
  "pending_list",
  "activity_list",
  "audit_list",
  "usage_get",
];

/** The tools a holder of `capabilities` is listed, in order. */
export function toolsFor(capabilities: readonly string[]): string[] {
  const allowed = new Set(capabilities.flatMap((capability) => BY_CAPABILITY[capability] ?? []));
  return ORDER.filter((name) => allowed.has(name));
}
